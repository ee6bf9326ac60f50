/**
 * WAL checkpoints off the event loop. A checkpoint copies the WAL into the database file and
 * fsyncs both; run by SQLite's auto-checkpoint it happens inside whichever commit crosses the
 * threshold, stalling every check and settle queued behind it for milliseconds (the p99 of
 * the check's latency target). Here a worker thread with its own connection checkpoints PASSIVE on a
 * timer and never blocks the writer. The WAL restarts from its start at the first write after a
 * checkpoint has caught up: at any pause in the traffic, or under writes without pause at the
 * writer's own backstop checkpoint (sqlite.ts), which then finds little left to copy.
 * Durability is unchanged: a commit is in the WAL before it is answered, checkpointed or not.
 */
import { sqliteDriverPath } from './sqlite-driver.ts';
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints. */
export const CHECKPOINT_EVERY_MS = 200;

const WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const Database = require(workerData.driver);
  const db = new Database(workerData.file);
  db.pragma('busy_timeout = 0');
  const timer = setInterval(() => {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Busy or gone: the next tick tries again, and the writer's own auto-checkpoint is the backstop.
    }
  }, workerData.everyMs);
  parentPort.once('message', () => {
    clearInterval(timer);
    db.close();
    parentPort.postMessage('closed');
  });
`;

/** A running checkpointer; `stop` closes its connection and ends the thread. */
export interface Checkpointer {
  stop(): Promise<void>;
}

/** Starts checkpointing the WAL of the database at `file` every `everyMs`. */
export function startCheckpointer(file: string, everyMs = CHECKPOINT_EVERY_MS): Checkpointer {
  const worker = new Worker(WORKER, { eval: true, workerData: { driver: sqliteDriverPath, file, everyMs } });
  worker.unref();
  // A failed worker leaves checkpoints to SQLite's auto-checkpoint; it must not take policy down.
  worker.on('error', () => {});
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        if (worker.threadId === -1) return resolve();
        const done = (): void => {
          void worker.terminate().finally(resolve);
        };
        worker.once('message', done);
        worker.once('exit', () => resolve());
        worker.postMessage('stop');
      });
      return stopped;
    },
  };
}
