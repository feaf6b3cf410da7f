// A real IMAP server for the tests: Debian's Dovecot (apt-get install dovecot-imapd), started in the foreground from
// a configuration in a throwaway directory, on a free port of 127.0.0.1, with passwords in a passwd-file and mail in
// maildirs there. It runs as the current user; Dovecot refuses to give mail to uid 0, so as root the mail belongs to
// `nobody` and its helper processes run as Debian's dovecot users (or `nobody` where those are missing).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { freePort } from './ports';

const dovecotBin = '/usr/sbin/dovecot';

export interface MailUser {
  user: string;
  password: string;
}

export interface Dovecot {
  host: string;
  port: number;
  /** Logged in as `user`, for seeding its mailbox and looking at what a run did; logged out by stop(). */
  as(user: MailUser): Promise<ImapFlow>;
  stop(): Promise<void>;
}

function uidOf(name: string): { uid: number; gid: number } | undefined {
  const r = spawnSync('id', [name], { encoding: 'utf8' });
  const m = /uid=(\d+).*gid=(\d+)/.exec(r.stdout);
  return r.status === 0 && m ? { uid: Number(m[1]), gid: Number(m[2]) } : undefined;
}

/** Who owns the mail, and who Dovecot's unprivileged processes run as. */
function accounts() {
  if (process.getuid?.() !== 0) {
    const me = os.userInfo();
    const group = spawnSync('id', ['-gn'], { encoding: 'utf8' }).stdout.trim();
    return { mail: { uid: me.uid, gid: me.gid }, internal: me.username, group, login: me.username };
  }
  const nobody = uidOf('nobody') ?? { uid: 65534, gid: 65534 };
  const debian = uidOf('dovecot') !== undefined;
  return {
    mail: nobody,
    internal: debian ? 'dovecot' : 'nobody',
    group: debian ? 'dovecot' : 'nogroup',
    login: uidOf('dovenull') ? 'dovenull' : 'nobody',
  };
}

function configText(dir: string, port: number, who: ReturnType<typeof accounts>) {
  return `
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = ${who.internal}
default_internal_group = ${who.group}
default_login_user = ${who.login}
first_valid_uid = 1
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = ${dir}/users
}
userdb {
  driver = passwd-file
  args = ${dir}/users
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
service stats {
  unix_listener stats-writer {
    mode = 0666
  }
}
namespace inbox {
  inbox = yes
  separator = /
  mailbox Sent {
    special_use = \\Sent
    auto = subscribe
  }
  mailbox Trash {
    special_use = \\Trash
    auto = subscribe
  }
}
`;
}

/** Starts Dovecot with these users (passwords in plain in its passwd-file: it is a test). */
export async function startDovecot(users: MailUser[]): Promise<Dovecot> {
  if (!fs.existsSync(dovecotBin))
    throw new Error(`Dovecot is not installed (${dovecotBin}): apt-get install dovecot-imapd`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-dovecot-'));
  fs.chmodSync(dir, 0o755); // the mail user must reach its maildir inside
  const who = accounts();
  for (const sub of ['run', 'state', 'mail']) fs.mkdirSync(path.join(dir, sub));
  fs.writeFileSync(
    path.join(dir, 'users'),
    users
      .map((u) => `${u.user}:{PLAIN}${u.password}:${who.mail.uid}:${who.mail.gid}::${dir}/mail/${u.user}`)
      .join('\n') + '\n',
  );
  fs.chmodSync(path.join(dir, 'users'), 0o644);
  fs.chownSync(path.join(dir, 'mail'), who.mail.uid, who.mail.gid);
  const port = await freePort();
  const conf = path.join(dir, 'dovecot.conf');
  fs.writeFileSync(conf, configText(dir, port, who));

  const child = spawn(dovecotBin, ['-F', '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += String(d)));
  const log = () => {
    const file = path.join(dir, 'dovecot.log');
    return `${stderr}${fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''}`.trim().slice(-2000);
  };
  const clients: ImapFlow[] = [];
  const stop = async () => {
    await Promise.all(clients.map((c) => c.logout().catch(() => c.close())));
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      'Dovecot to listen',
      async () => {
        if (child.exitCode !== null) throw new Error('exited');
        await tcpOpen(port);
      },
      30_000,
    );
  } catch {
    const why = log();
    await stop();
    throw new Error(`Dovecot did not start on 127.0.0.1:${port}:\n${why}`);
  }
  return {
    host: '127.0.0.1',
    port,
    async as(user) {
      const client = new ImapFlow({
        host: '127.0.0.1',
        port,
        secure: false,
        auth: { user: user.user, pass: user.password },
        logger: false,
      });
      client.on('error', () => undefined);
      await client.connect();
      clients.push(client);
      return client;
    },
    stop,
  };
}
