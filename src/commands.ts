import { Command, type Config, type Interfaces } from '@oclif/core';

/**
 * Every command, for oclif's explicit command discovery (package.json's
 * oclif.commands). oclif finds commands in oclif.manifest.json (their flags and
 * help texts in dist/cli/oclif-help.json: src/cli/help-details.ts), so a
 * command's module is imported only when that command runs: each entry
 * is a stand-in that imports its command, and with it only what that command
 * uses, at run time. A unit test keeps this list equal to src/commands and
 * the commands of @oclif/plugin-help and @oclif/plugin-autocomplete, whose
 * manifest entries scripts/gen-oclif-manifest.mjs copies into podctl's: no
 * plugin is looked for at start.
 */
function lazy(load: () => Promise<Command.Class>): Command.Class {
  return class LazyCommand extends Command {
    static override async run<T extends Command>(this: new (argv: string[], config: Config) => T, argv?: string[], opts?: Interfaces.LoadOptions): Promise<ReturnType<T['run']>> {
      // oclif set the id and plugin on this stand-in when it found it; the real class runs as that command.
      const self = this as unknown as Command.Class;
      const real = await load();
      // The commands' flags and texts, which the manifest loaded at start leaves out, for what reads them here:
      // autocomplete, and oclif's error handler, which shows the command's usage and flags after a usage error.
      // A Config: oclif's, loaded at start, or the part of one src/cli/direct.ts hands a podctl command.
      const config = opts instanceof Object && 'runHook' in opts ? (opts as Interfaces.Config) : undefined;
      const addHelpDetails = async () => config && 'getPluginsList' in config && (await import('./cli/help-details.js')).addHelpDetails(config);
      if (self.id.startsWith('autocomplete')) await addHelpDetails();
      // oclif reads an absent argument from a piped stdin (waiting up to 10 ms for it): \`echo x | podctl get pods\`
      // would list pod x, and \`podctl help < file\` show the help of the file's first line. podctl's own
      // commands say ignoreStdin on each argument (a unit test checks); this covers the plugins' help and autocomplete.
      for (const arg of Object.values(real.args ?? {})) arg.ignoreStdin = true;
      real.id = self.id;
      real.plugin = self.plugin;
      try {
        if (!config) return (await real.run(argv, opts)) as ReturnType<T['run']>;
        // What oclif's static run does, but on the configuration loaded at start: given one, the static run
        // loads another from it (for a plugin built on another oclif; podctl bundles one), its theme file again too.
        type Runnable = new (argv: string[], config: Interfaces.Config) => { _run(): Promise<unknown> };
        return (await new (real as unknown as Runnable)(argv ?? process.argv.slice(2), config)._run()) as ReturnType<T['run']>;
      } catch (err) {
        if ((err as { showHelp?: boolean }).showHelp) await addHelpDetails();
        throw err;
      }
    }

    async run(): Promise<void> {
      throw new Error('a command is run through its static run');
    }
  };
}

export const COMMANDS: Record<string, Command.Class> = {
  'agent': lazy(() => import('./commands/agent/index.js').then((m) => m.Agent)),
  'agent:install': lazy(() => import('./commands/agent/install.js').then((m) => m.AgentInstall)),
  'agent:status': lazy(() => import('./commands/agent/status.js').then((m) => m.AgentStatus)),
  'agent:stop': lazy(() => import('./commands/agent/stop.js').then((m) => m.AgentStop)),
  'autocomplete': lazy(() => import('@oclif/plugin-autocomplete/lib/commands/autocomplete/index.js').then((m) => m.default)),
  'autocomplete:create': lazy(() => import('@oclif/plugin-autocomplete/lib/commands/autocomplete/create.js').then((m) => m.default)),
  'autocomplete:script': lazy(() => import('@oclif/plugin-autocomplete/lib/commands/autocomplete/script.js').then((m) => m.default)),
  'attach': lazy(() => import('./commands/attach.js').then((m) => m.Attach)),
  'bundle': lazy(() => import('./commands/bundle.js').then((m) => m.BundleCommand)),
  'condition': lazy(() => import('./commands/condition.js').then((m) => m.Condition)),
  'cp': lazy(() => import('./commands/cp.js').then((m) => m.Cp)),
  'debug': lazy(() => import('./commands/debug.js').then((m) => m.Debug)),
  'delete': lazy(() => import('./commands/delete.js').then((m) => m.Delete)),
  'describe': lazy(() => import('./commands/describe.js').then((m) => m.Describe)),
  'events': lazy(() => import('./commands/events.js').then((m) => m.Events)),
  'exec': lazy(() => import('./commands/exec.js').then((m) => m.Exec)),
  'get:containers': lazy(() => import('./commands/get/containers.js').then((m) => m.GetContainers)),
  'get:images': lazy(() => import('./commands/get/images.js').then((m) => m.GetImages)),
  'get:pods': lazy(() => import('./commands/get/pods.js').then((m) => m.GetPods)),
  'help': lazy(() => import('@oclif/plugin-help').then((m) => m.commands.help)),
  'image:prune': lazy(() => import('./commands/image/prune.js').then((m) => m.ImagePrune)),
  'info': lazy(() => import('./commands/info.js').then((m) => m.Info)),
  'inspect': lazy(() => import('./commands/inspect.js').then((m) => m.Inspect)),
  'logs': lazy(() => import('./commands/logs.js').then((m) => m.Logs)),
  'plan': lazy(() => import('./commands/plan.js').then((m) => m.Plan)),
  'pleg-events': lazy(() => import('./commands/pleg-events.js').then((m) => m.PlegEvents)),
  'port-forward': lazy(() => import('./commands/port-forward.js').then((m) => m.PortForward)),
  'run': lazy(() => import('./commands/run.js').then((m) => m.Run)),
  'runtime:down': lazy(() => import('./commands/runtime/down.js').then((m) => m.RuntimeDown)),
  'runtime:status': lazy(() => import('./commands/runtime/status.js').then((m) => m.RuntimeStatus)),
  'runtime:up': lazy(() => import('./commands/runtime/up.js').then((m) => m.RuntimeUp)),
  'stats': lazy(() => import('./commands/stats.js').then((m) => m.Stats)),
  'sync-once': lazy(() => import('./commands/sync-once.js').then((m) => m.SyncOnce)),
  'validate': lazy(() => import('./commands/validate.js').then((m) => m.Validate)),
  'version': lazy(() => import('./commands/version.js').then((m) => m.Version)),
  'watch': lazy(() => import('./commands/watch.js').then((m) => m.Watch)),
};
