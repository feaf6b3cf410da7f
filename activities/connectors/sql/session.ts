// What every pooled session of a SQL connection is before any statement runs on it (activities/connectors/sql/client.ts
// adds these to the knex client): its statement time limit and, unless the connection allows writes, read-only as
// the server's own default, so a statement that closes the transaction it was given still cannot write. A user the
// server lets run programs or write files (a PostgreSQL superuser, a MySQL user with FILE) is refused: no read-only
// mode stops `COPY … TO PROGRAM` or `SELECT … INTO OUTFILE`.
import type { Connection as MysqlConnection } from 'mysql2';
import type { Client as PgClient } from 'pg';
import type { SqlConfig, SqlKind } from '../../../model/connection';

/**
 * PostgreSQL's startup options for the session (`-c name=value`): the server applies them before the first statement
 * and they are the session's defaults, which a transaction's `SET LOCAL` or a closed transaction cannot take away.
 */
export function postgresSessionOptions(config: SqlConfig): string {
  const settings = [`statement_timeout=${config.statement_timeout_ms}`];
  if (!config.allow_writes) settings.unshift('default_transaction_read_only=on');
  return settings.map((s) => `-c ${s}`).join(' ');
}

const pgPowerfulUser = `select session_user as name, exists(
    select 1 from pg_roles r
     where (r.rolsuper or r.rolname in ('pg_execute_server_program', 'pg_write_server_files'))
       and pg_has_role(session_user, r.oid, 'member')) as powerful`;

// information_schema.user_privileges names a grantee 'user'@'host'; current_user() answers user@host.
const mysqlFileUser = `select current_user() as name, exists(
    select 1 from information_schema.user_privileges
     where privilege_type = 'FILE'
       and grantee = concat('''', substring_index(current_user(), '@', 1), '''@''',
                            substring_index(current_user(), '@', -1), '''')) as powerful`;

/** The statements that give a new MySQL/MariaDB session its limits (MariaDB's time limit in seconds, MySQL's in ms). */
export function mysqlSessionStatements(config: SqlConfig): string[][] {
  return [
    ...(config.allow_writes ? [] : [['set session transaction read only']]),
    [
      `set session max_statement_time = ${config.statement_timeout_ms / 1000}`,
      `set session max_execution_time = ${config.statement_timeout_ms}`,
    ],
  ];
}

function mysqlQuery(conn: MysqlConnection, sql: string): Promise<unknown> {
  return new Promise((resolve, reject) => conn.query(sql, (err, rows) => (err ? reject(err) : resolve(rows))));
}

const refusedUser = (name: string, what: string) =>
  new Error(
    `the database user "${name}" ${what}, which no read-only session prevents: connect as a user without these rights`,
  );

/** knex's `pool.afterCreate`: checks the user and sets the session up; a session that fails is closed, not pooled. */
export function sessionSetup(kind: SqlKind, config: SqlConfig) {
  return (conn: unknown, done: (err: Error | null, conn: unknown) => void) => {
    const setup = async () => {
      if (kind === 'postgres') {
        const { rows } = await (conn as PgClient).query(pgPowerfulUser);
        if (rows[0].powerful)
          throw refusedUser(
            String(rows[0].name),
            'is a superuser or may run programs or write files on the database server (pg_execute_server_program, pg_write_server_files)',
          );
        return;
      }
      const my = conn as MysqlConnection;
      const [user] = (await mysqlQuery(my, mysqlFileUser)) as { name: string; powerful: number }[];
      if (Number(user.powerful))
        throw refusedUser(user.name, 'has the FILE privilege (it may read and write files on the database server)');
      for (const [first, ...otherwise] of mysqlSessionStatements(config)) {
        // The first that the server knows: MariaDB's variable, else MySQL's.
        await otherwise.reduce((tried, next) => tried.catch(() => mysqlQuery(my, next)), mysqlQuery(my, first));
      }
    };
    setup().then(
      () => done(null, conn),
      (err: Error) => {
        // knex does not close a session its afterCreate refused.
        if (kind === 'postgres') void (conn as PgClient).end().catch(() => {});
        else (conn as MysqlConnection).destroy();
        done(err, conn);
      },
    );
  };
}
