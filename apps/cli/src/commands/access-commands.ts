import type { Command } from 'commander';
import { SCHEDULER_FLAG } from '../flags';
import { parseFormat } from '../output/format';
import { runBind, runLogin, runLogout, runTokenCreate, runTokenList, runTokenRevoke, runUnbind, runUserCreate, runUserDelete, runUserGet, runUserList, runWhoAmI } from './access';

/** What the access commands need from the program: where the scheduler and the home are, and where output goes. */
export interface AccessCommandContext {
  schedulerOf(o: { scheduler?: string }): string;
  home(): string;
  out(text: string): void;
}

/** `gpufleet auth …` and `gpufleet users …` (docs/cli.md#gpufleet-auth, #gpufleet-users). */
export function registerAccessCommands(program: Command, ctx: AccessCommandContext): void {
  const auth = program.command('auth').description('who the CLI calls gpufleet as: log in with an access token, log out, who am I');

  auth
    .command('login')
    .description('check an access token (gfat_…, from `gpufleet users token create`) and keep it in the home (0600) for every later command')
    .requiredOption('--token <token>', 'the access token')
    .option('--scheduler <host:port>', "the cluster's scheduler, kept for later commands (default: the local stack of --home)")
    .option('--router <host:port>', "the cluster's router KeyService, kept for later commands")
    .option('--delivery <host:port>', "the cluster's model delivery (ModelDeliveryService), kept for later commands")
    .action(async (o) => {
      const { tlsCa, tlsCert, tlsKey } = program.opts<{ tlsCa?: string; tlsCert?: string; tlsKey?: string }>();
      const tls = tlsCa || tlsCert || tlsKey ? { ca: tlsCa, cert: tlsCert, key: tlsKey } : undefined;
      const login = { token: o.token as string, scheduler: o.scheduler as string | undefined, router: o.router as string | undefined, delivery: o.delivery as string | undefined, tls };
      await runLogin(ctx.schedulerOf(o), ctx.home(), login, ctx.out);
    });

  auth
    .command('logout')
    .description('forget the token of `gpufleet auth login`')
    .action(() => runLogout(ctx.home(), ctx.out));

  auth
    .command('whoami')
    .description('the principal the CLI calls as, and its roles')
    .option(...SCHEDULER_FLAG)
    .action(async (o) => {
      await runWhoAmI(ctx.schedulerOf(o), ctx.out);
    });

  const users = program.command('users').description('users and service accounts, their roles and access tokens (needs the admin role)');

  users
    .command('create')
    .description('create a user (or, with --service-account, a service account)')
    .argument('<name>', '1-63 characters: a-z, 0-9, ".", "_", "-"')
    .option('--service-account', 'a program (CI, a console) rather than a person')
    .option('--description <text>', 'what it is for')
    .option(...SCHEDULER_FLAG)
    .action(async (name: string, o) => {
      await runUserCreate(ctx.schedulerOf(o), name, o, ctx.out);
    });

  users
    .command('list')
    .description('every user and service account with its roles')
    .option('-o, --output <format>', 'table | wide | json | yaml', 'table')
    .option(...SCHEDULER_FLAG)
    .action(async (o) => {
      await runUserList(ctx.schedulerOf(o), parseFormat(o.output), ctx.out);
    });

  users
    .command('get')
    .description("one user: its roles and tokens (never a token's secret)")
    .argument('<name>')
    .option('-o, --output <format>', 'text | json | yaml', 'text')
    .option(...SCHEDULER_FLAG)
    .action(async (name: string, o) => {
      await runUserGet(ctx.schedulerOf(o), name, o.output === 'text' ? 'table' : parseFormat(o.output), ctx.out);
    });

  users
    .command('delete')
    .description('delete a user with its tokens and role bindings')
    .argument('<name>')
    .option(...SCHEDULER_FLAG)
    .action(async (name: string, o) => {
      await runUserDelete(ctx.schedulerOf(o), name, ctx.out);
    });

  users
    .command('bind')
    .description('give a role: admin (cluster-wide), or edit / view in a namespace ("*": every namespace)')
    .argument('<name>')
    .requiredOption('--role <role>', 'admin | edit | view')
    .option('--namespace <ns>', 'for edit and view: the namespace, or "*"')
    .option(...SCHEDULER_FLAG)
    .action(async (name: string, o) => {
      await runBind(ctx.schedulerOf(o), name, o.role, o.namespace, ctx.out);
    });

  users
    .command('unbind')
    .description('take a role away')
    .argument('<name>')
    .requiredOption('--role <role>', 'admin | edit | view')
    .option('--namespace <ns>', 'for edit and view: the namespace, or "*"')
    .option(...SCHEDULER_FLAG)
    .action(async (name: string, o) => {
      await runUnbind(ctx.schedulerOf(o), name, o.role, o.namespace, ctx.out);
    });

  const tokens = users.command('token').description('access tokens of users and service accounts');

  tokens
    .command('create')
    .description('a new access token; printed this once, only its hash is stored')
    .argument('<name>', 'the user or service account')
    .option('--expires <when>', 'a duration (30d, 12h) or an ISO date, at most ten years; default never')
    .option('--description <text>', "e.g. \"alice's laptop\"")
    .option(...SCHEDULER_FLAG)
    .action(async (name: string, o) => {
      await runTokenCreate(ctx.schedulerOf(o), name, o, ctx.out);
    });

  tokens
    .command('list')
    .description("tokens (one principal's, or every one), newest first")
    .argument('[name]')
    .option('-o, --output <format>', 'table | json | yaml', 'table')
    .option(...SCHEDULER_FLAG)
    .action(async (name: string | undefined, o) => {
      await runTokenList(ctx.schedulerOf(o), name, parseFormat(o.output), ctx.out);
    });

  tokens
    .command('revoke')
    .description('revoke a token: every replica refuses it within a second')
    .argument('<id>', 'the 12 characters after gfat_')
    .option(...SCHEDULER_FLAG)
    .action(async (id: string, o) => {
      await runTokenRevoke(ctx.schedulerOf(o), id, ctx.out);
    });
}
