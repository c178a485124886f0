import {
  applicationSettingsFor,
  DEFAULT_SERVICE_SETTINGS,
  happyPath,
  parseDurationMs,
  SettingsError,
  statusVocabulary,
} from '../../src/shared/application-settings';

describe('application settings', () => {
  it('reads durations with units or as whole milliseconds', () => {
    expect(parseDurationMs('250ms')).toBe(250);
    expect(parseDurationMs('1.5s')).toBe(1_500);
    expect(parseDurationMs('5m')).toBe(300_000);
    expect(parseDurationMs('2h')).toBe(7_200_000);
    expect(parseDurationMs('30d')).toBe(30 * 86_400_000);
    expect(parseDurationMs('1200')).toBe(1_200);
    expect(parseDurationMs('1.5')).toBeUndefined();
    expect(parseDurationMs('soon')).toBeUndefined();
    expect(parseDurationMs('-1s')).toBeUndefined();
  });

  it('merges a request over the environment, keeping the vocabulary the operator set', () => {
    const defaults = DEFAULT_SERVICE_SETTINGS.applications;
    const settings = applicationSettingsFor(defaults, { fastPollIntervalMs: 5_000, deadlineMs: undefined });
    expect(settings).toEqual({ ...defaults, fastPollIntervalMs: 5_000 });
    expect(settings.statusOrder).not.toBe(defaults.statusOrder);
  });

  it('refuses a combination where a cap falls below the fast interval', () => {
    const defaults = DEFAULT_SERVICE_SETTINGS.applications;
    expect(() => applicationSettingsFor(defaults, { fastPollIntervalMs: 20 * 60_000 })).toThrow(SettingsError);
    let thrown: unknown;
    try {
      applicationSettingsFor(defaults, { noWebhookPollIntervalMs: 60 * 60_000 });
    } catch (err) {
      thrown = err;
    }
    expect((thrown as SettingsError).problems).toEqual([
      { field: 'noWebhookPollIntervalMs', message: 'must not be above the slow interval (15m)' },
    ]);
  });

  it('builds the happy path of a vocabulary: the non-terminal statuses by rank, then the first terminal one', () => {
    const { vocabulary, problems } = statusVocabulary(['NEW', 'REVIEW', 'PAID', 'REFUSED'], ['PAID', 'REFUSED']);
    expect(problems).toEqual([]);
    expect(happyPath(vocabulary)).toEqual(['NEW', 'REVIEW', 'PAID']);
    expect(happyPath(DEFAULT_SERVICE_SETTINGS.applications)).toEqual([
      'CREATED',
      'IN_PROGRESS',
      'APPROVED',
      'SIGNED',
      'COMPLETED',
    ]);
  });
});
