/**
 * The Envoy bootstrap and SDS file the chart deploys, as `helm template` renders them from
 * charts/tintype (files/envoy.yaml is a template; nothing else in the repository holds the config).
 */
import { parse } from 'yaml';
import { named, render } from '../helm.ts';

export interface RenderedEnvoy {
  /** The bootstrap's text, comments included. */
  text: string;
  /** The bootstrap, parsed. */
  doc: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The SDS file of the certificate, parsed. */
  sds: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The Envoy ConfigMap of a render with one of the chart's ci values files (plus `--set`s). */
export async function renderedEnvoy(valuesFile: string, extra: string[] = []): Promise<RenderedEnvoy> {
  const cm = named(await render(valuesFile, extra), 'ConfigMap', 'tt-envoy') as unknown as { data: Record<string, string> };
  const text = cm.data['envoy.yaml'];
  const sds = cm.data['tls-sds.yaml'];
  if (text === undefined || sds === undefined) throw new Error(`${valuesFile}: the Envoy ConfigMap has no envoy.yaml or tls-sds.yaml`);
  return { text, doc: parse(text), sds: parse(sds) };
}
