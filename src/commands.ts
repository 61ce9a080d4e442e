import type { Command } from '@oclif/core';
import { Agent } from './commands/agent/index.js';
import { AgentInstall } from './commands/agent/install.js';
import { AgentStatus } from './commands/agent/status.js';
import { AgentStop } from './commands/agent/stop.js';
import { Attach } from './commands/attach.js';
import { BundleCommand } from './commands/bundle.js';
import { Condition } from './commands/condition.js';
import { Cp } from './commands/cp.js';
import { Debug } from './commands/debug.js';
import { Delete } from './commands/delete.js';
import { Describe } from './commands/describe.js';
import { Events } from './commands/events.js';
import { Exec } from './commands/exec.js';
import { GetContainers } from './commands/get/containers.js';
import { GetImages } from './commands/get/images.js';
import { GetPods } from './commands/get/pods.js';
import { ImagePrune } from './commands/image/prune.js';
import { Info } from './commands/info.js';
import { Inspect } from './commands/inspect.js';
import { Kubeconfig } from './commands/kubeconfig.js';
import { Logs } from './commands/logs.js';
import { Plan } from './commands/plan.js';
import { PlegEvents } from './commands/pleg-events.js';
import { PortForward } from './commands/port-forward.js';
import { Run } from './commands/run.js';
import { RuntimeDown } from './commands/runtime/down.js';
import { RuntimeStatus } from './commands/runtime/status.js';
import { RuntimeUp } from './commands/runtime/up.js';
import { Stats } from './commands/stats.js';
import { SyncOnce } from './commands/sync-once.js';
import { Validate } from './commands/validate.js';
import { Version } from './commands/version.js';
import { Watch } from './commands/watch.js';

/**
 * Every command, for oclif's explicit command discovery (package.json's oclif.commands). oclif routes,
 * lists and shows help from oclif.manifest.json, and imports this index only to run a command.
 */
export const COMMANDS: Record<string, Command.Class> = {
  agent: Agent,
  'agent:install': AgentInstall,
  'agent:status': AgentStatus,
  'agent:stop': AgentStop,
  attach: Attach,
  bundle: BundleCommand,
  condition: Condition,
  cp: Cp,
  debug: Debug,
  delete: Delete,
  describe: Describe,
  events: Events,
  exec: Exec,
  'get:containers': GetContainers,
  'get:images': GetImages,
  'get:pods': GetPods,
  'image:prune': ImagePrune,
  info: Info,
  inspect: Inspect,
  kubeconfig: Kubeconfig,
  logs: Logs,
  plan: Plan,
  'pleg-events': PlegEvents,
  'port-forward': PortForward,
  run: Run,
  'runtime:down': RuntimeDown,
  'runtime:status': RuntimeStatus,
  'runtime:up': RuntimeUp,
  stats: Stats,
  'sync-once': SyncOnce,
  validate: Validate,
  version: Version,
  watch: Watch,
};
