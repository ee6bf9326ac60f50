/**
 * The process of one browser (session.ts; docs/security.md "The browser container"): started by
 * the launcher for each connection with the connection as fd 3 and the launcher's settings as its
 * one argument, it serves that browser and exits once the browser and its directory are gone. A
 * compromised Chromium that reached into it (same uid) reaches one browser's bridge, which ends
 * with that browser; the next browser gets a fresh process.
 */
import net from 'node:net';
import { Session, type LauncherLog, type SessionMessage, type SessionSettings } from './session.ts';

/** After the browser is gone, how long the connection may take to read a refusal and close. */
const LINGER_MS = 5_000;
/** The connection's descriptor, as the launcher passes it. */
const CONNECTION_FD = 3;

const log: LauncherLog = (event, fields = {}) => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), role: 'browser', event, ...fields })}\n`);
};

const settings = JSON.parse(process.argv[2] ?? '{}') as SessionSettings;
const socket = new net.Socket({ fd: CONNECTION_FD, readable: true, writable: true });
let closed = false;
socket.once('close', () => (closed = true));
const exit = (): void => process.exit(0);
/** What the launcher is told on its channel (server.ts). */
const tell = (message: SessionMessage): void => void process.send?.(message);
const session = new Session(socket, { ...settings, env: process.env, log, started: (pid, dir) => tell({ started: pid, dir }) }, () => {
  // The browser is gone: it no longer counts against the launcher's bound, whatever the connection does.
  tell({ ended: true });
  if (closed) return exit();
  socket.once('close', exit);
  setTimeout(exit, LINGER_MS).unref();
});
// The launcher stopping: the browser goes now (session.end kills its group).
process.on('SIGTERM', () => session.end('launcher stopping'));
process.on('SIGINT', () => session.end('launcher stopping'));
