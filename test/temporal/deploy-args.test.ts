import { DEPLOY_USAGE, parseDeployArgs } from '../../src/tools/deploy';

describe('npm run deploy: arguments', () => {
  it('reads each command and the build id', () => {
    expect(parseDeployArgs(['status'])).toEqual({ command: 'status', buildId: undefined });
    expect(parseDeployArgs(['promote', '--build-id', 'wf-1'])).toEqual({ command: 'promote', buildId: 'wf-1' });
    expect(parseDeployArgs(['ramp', '25'])).toEqual({ command: 'ramp', buildId: undefined, percent: 25 });
    expect(parseDeployArgs(['nudge'])).toEqual({ command: 'nudge', buildId: undefined });
  });
  it.each([
    [[], /a command is required/],
    [['deploy-everything'], /unknown command/],
    [['ramp', '101'], /0 to 100/],
    [['ramp'], /0 to 100/],
    [['promote', '--build-id'], /needs a value/],
    [['status', 'extra'], /unexpected argument extra/],
  ])('refuses %j, saying why', (argv, message) => {
    expect(() => parseDeployArgs(argv)).toThrow(message);
  });
  it('documents every command in its usage', () => {
    for (const command of ['status', 'promote', 'ramp', 'nudge']) expect(DEPLOY_USAGE).toContain(command);
  });
});
