import { Pool, type PoolClient } from 'pg';
import { describeUrl } from './setting';

/**
 * What the PostgreSQL stores share (the audit trail, ./postgres-audit-log.ts; the merchant key store,
 * src/keys/postgres-merchant-key-store.ts): a small pool whose queries fail rather than hang, the schema made once per
 * process (serialized across processes by an advisory lock, tried again after a failure), and transactions.
 */
export abstract class PostgresStore {
  /** host, port and database: never the URL's password. */
  readonly location: string;
  protected readonly pool: Pool;
  private schema: Promise<void> | undefined;

  protected constructor(
    url: string,
    private readonly ddl: { sql: string; lock: number },
    options: { applicationName: string; maxConnections?: number },
  ) {
    this.location = describeUrl(url);
    this.pool = new Pool({
      connectionString: url,
      max: options.maxConnections ?? 4,
      connectionTimeoutMillis: 5_000,
      // An action waits for its store: a database that does not answer fails it rather than holding it.
      query_timeout: 10_000,
      application_name: options.applicationName,
    });
    // An idle connection that breaks is replaced by the pool; the next query reports the database's state.
    this.pool.on('error', () => undefined);
  }

  /** Creates the tables once (idempotent, serialized across processes); again after a failure. */
  ready(): Promise<void> {
    this.schema ??= this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [this.ddl.lock]);
      await c.query(this.ddl.sql);
    }).catch((err: unknown) => {
      this.schema = undefined;
      throw err;
    });
    return this.schema;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** `store` with its tables made, or closed and the error thrown: a process that cannot keep its store does not start. */
  static async opened<S extends PostgresStore>(store: S): Promise<S> {
    try {
      await store.ready();
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
    return store;
  }

  protected async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}
