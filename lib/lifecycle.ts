/** The one lifecycle of anything that owns a process or a socket. */
export interface Lifecycle {
  start(): Promise<void>;
  /** Stops accepting work, finishes or aborts what is in flight, releases every resource. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  healthy(): boolean;
}
