/** Chromium's environment, built from an allow-list (launcher/environment.ts: the launcher starts Chromium with it too). */
export { chromiumEnvironment } from './launcher/environment.ts';
