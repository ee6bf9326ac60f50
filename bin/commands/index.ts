/** The subcommand table of docs/architecture.md §1. Each entry wires one role; no logic here. */
import type { Command } from './command.ts';
import { controllerCommand } from './controller.ts';
import { guardCommand } from './guard.ts';
import { keysCommand } from './keys.ts';
import { policyCommand } from './policy.ts';
import { rendererCommand } from './renderer.ts';
import { startCommand } from './start.ts';
import { usageCommand } from './usage.ts';

export const commands: Record<string, Command> = {
  start: startCommand,
  policy: policyCommand,
  renderer: rendererCommand,
  guard: guardCommand,
  controller: controllerCommand,
  keys: keysCommand,
  usage: usageCommand,
};
