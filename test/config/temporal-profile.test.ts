import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { resolveTemporalProfile } from '../../src/temporal/profile';
import { configIssuesOf as issuesOf } from '../helpers/config';

/**
 * Address, namespace, API key and TLS are decided by @temporalio/envconfig, as the `temporal` CLI decides them:
 * a profile of a TOML file, then TEMPORAL_* variables over it; our defaults only fill the gaps. The profile files
 * here are real files in a temporary directory, read through the library's own loader.
 */
const dir = mkdtempSync(join(tmpdir(), 'paylater-profile-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const caPath = file('ca.pem', '-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n');
const CONFIG = file(
  'temporal.toml',
  `
[profile.default]
address = "localhost:7233"

[profile.staging]
address = "staging.internal:7233"
namespace = "paylater-staging"

[profile.cloud]
address = "paylater.a1b2c.tmprl.cloud:7233"
namespace = "paylater.a1b2c"
api_key = "cloud-api-key-from-the-profile"

[profile.mtls]
address = "paylater.a1b2c.tmprl.cloud:7233"
namespace = "paylater.a1b2c"
[profile.mtls.tls]
server_ca_cert_path = "${caPath}"

[profile.nameonly]
namespace = "only-a-namespace"
`,
);

describe('Temporal connection settings (envconfig precedence)', () => {
  it("takes the profile's namespace: our default does not override it", () => {
    const config = loadConfig({ TEMPORAL_CONFIG_FILE: CONFIG, TEMPORAL_PROFILE: 'staging' });
    expect(config.temporal).toMatchObject({
      address: 'staging.internal:7233',
      namespace: 'paylater-staging',
      connection: { addressFrom: `profile "staging" of ${CONFIG}`, apiKey: false, tls: false },
    });
  });

  it('lets TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE override the profile', () => {
    const config = loadConfig({
      TEMPORAL_CONFIG_FILE: CONFIG,
      TEMPORAL_PROFILE: 'staging',
      TEMPORAL_ADDRESS: 'other:7233',
      TEMPORAL_NAMESPACE: 'ns-from-env',
    });
    expect(config.temporal).toMatchObject({
      address: 'other:7233',
      namespace: 'ns-from-env',
      connection: { addressFrom: 'TEMPORAL_ADDRESS' },
    });
  });

  it('reads the "default" profile when TEMPORAL_PROFILE is unset', () => {
    const config = loadConfig({ TEMPORAL_CONFIG_FILE: CONFIG });
    expect(config.temporal.address).toBe('localhost:7233');
    expect(config.temporal.namespace).toBe('default');
  });

  it('defaults the namespace to "default" and starts the embedded server when nothing names a server', () => {
    expect(loadConfig({}).temporal).toMatchObject({ address: undefined, namespace: 'default' });
    // A profile without an address is still embedded, with the profile's namespace.
    const config = loadConfig({ TEMPORAL_CONFIG_FILE: CONFIG, TEMPORAL_PROFILE: 'nameonly' });
    expect(config.temporal).toMatchObject({ address: undefined, namespace: 'only-a-namespace' });
  });

  it('treats blank variables as unset, as the rest of the schema does', () => {
    const config = loadConfig({
      TEMPORAL_CONFIG_FILE: CONFIG,
      TEMPORAL_PROFILE: 'staging',
      TEMPORAL_ADDRESS: '',
      TEMPORAL_NAMESPACE: ' ',
    });
    expect(config.temporal).toMatchObject({ address: 'staging.internal:7233', namespace: 'paylater-staging' });
  });

  it('turns TLS on for an API key, from the profile or the environment, and never keeps the key', () => {
    const cloud = loadConfig({ TEMPORAL_CONFIG_FILE: CONFIG, TEMPORAL_PROFILE: 'cloud' });
    expect(cloud.temporal).toMatchObject({
      address: 'paylater.a1b2c.tmprl.cloud:7233',
      namespace: 'paylater.a1b2c',
      connection: { apiKey: true, tls: true },
    });
    expect(JSON.stringify(cloud.temporal)).not.toContain('cloud-api-key-from-the-profile');

    const fromEnv = resolveTemporalProfile({ TEMPORAL_ADDRESS: 'x.tmprl.cloud:7233', TEMPORAL_API_KEY: 'k' });
    expect(fromEnv.profile).toMatchObject({ apiKey: true, tls: true });
    // TEMPORAL_TLS=false is an explicit choice (a local proxy, say): kept.
    const plain = resolveTemporalProfile({
      TEMPORAL_ADDRESS: 'proxy:7233',
      TEMPORAL_API_KEY: 'k',
      TEMPORAL_TLS: 'false',
    });
    expect(plain.profile).toMatchObject({ apiKey: true, tls: false });
  });

  it('takes mTLS from the profile and reads its files at start-up', () => {
    const mtls = resolveTemporalProfile({ TEMPORAL_CONFIG_FILE: CONFIG, TEMPORAL_PROFILE: 'mtls' });
    expect(mtls.profile).toMatchObject({ tls: true, apiKey: false });
    const missing = resolveTemporalProfile({
      TEMPORAL_CONFIG_FILE: CONFIG,
      TEMPORAL_PROFILE: 'mtls',
      TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'nope.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: join(dir, 'nope.key'),
    });
    expect(missing.issues).toEqual([
      { variable: 'TEMPORAL_TLS_CLIENT_CERT_PATH', message: expect.stringContaining('nope.pem') },
    ]);
  });

  it('stops start-up naming TEMPORAL_PROFILE for a profile that is not in the file', () => {
    expect(issuesOf({ TEMPORAL_CONFIG_FILE: CONFIG, TEMPORAL_PROFILE: 'prod' })).toEqual([
      { variable: 'TEMPORAL_PROFILE', message: expect.stringMatching(/profile "prod" of .*temporal\.toml.*not found/) },
    ]);
    // No file at all and a profile asked for by name: the same.
    expect(issuesOf({ HOME: dir, TEMPORAL_PROFILE: 'prod' }).map((i) => i.variable)).toEqual(['TEMPORAL_PROFILE']);
  });

  it('stops start-up naming TEMPORAL_CONFIG_FILE for a missing or malformed file', () => {
    expect(issuesOf({ TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') })).toEqual([
      { variable: 'TEMPORAL_CONFIG_FILE', message: expect.stringContaining('does not exist') },
    ]);
    const broken = file('broken.toml', '[profile.default\naddress = ');
    expect(issuesOf({ TEMPORAL_CONFIG_FILE: broken }).map((i) => i.variable)).toEqual(['TEMPORAL_CONFIG_FILE']);
  });

  it("checks the profile's address like TEMPORAL_ADDRESS", () => {
    const bad = file('bad-address.toml', '[profile.default]\naddress = "https://temporal.example"\n');
    expect(issuesOf({ TEMPORAL_CONFIG_FILE: bad })).toEqual([
      {
        variable: 'TEMPORAL_PROFILE',
        message: expect.stringMatching(/"https:\/\/temporal\.example": must be host:port/),
      },
    ]);
  });

  it('refuses credentials without an address: embedded means no server is named anywhere', () => {
    expect(issuesOf({ TEMPORAL_API_KEY: 'a-key' })).toEqual([
      { variable: 'TEMPORAL_ADDRESS', message: expect.stringContaining('TEMPORAL_API_KEY') },
    ]);
    expect(issuesOf({ TEMPORAL_TLS: 'true' }).map((i) => i.variable)).toEqual(['TEMPORAL_ADDRESS']);
    // Saying TLS is off asks for nothing.
    expect(loadConfig({ TEMPORAL_TLS: 'false' }).temporal.address).toBeUndefined();
    // No message echoes a key.
    expect(JSON.stringify(issuesOf({ TEMPORAL_API_KEY: 'secret-key-value' }))).not.toContain('secret-key-value');
  });

  it('finds the default config file under HOME, as the CLI does', () => {
    const home = mkdtempSync(join(tmpdir(), 'paylater-home-'));
    const configDir = join(home, '.config', 'temporalio');
    mkdirSync(configDir, { recursive: true });
    writeFileSync(join(configDir, 'temporal.toml'), '[profile.default]\nnamespace = "from-home"\n');
    expect(loadConfig({ HOME: home }).temporal.namespace).toBe('from-home');
    expect(loadConfig({ HOME: home, XDG_CONFIG_HOME: join(home, 'elsewhere') }).temporal.namespace).toBe('default');
  });
});
