import { withoutWebhookUrl } from '../../src/shared/bank-wire';

describe('withoutWebhookUrl (the create answer a merchant sees)', () => {
  const hash = 'hV3x1nq0b8_Zk2sY9aQ4mW7eR1tU6iO3pL5kJ8hG0fD';

  it('drops every field named like a webhook, at any depth, and keeps the rest as the bank sent it', () => {
    const answer = {
      financeApplicationId: 'fa-1',
      status: 'CREATED',
      webhookUrl: `https://paylater.example/webhooks/finance-applications/r/${hash}`,
      WebHook_URL: 'x',
      links: { webhook: 'y', self: 'https://bank.example/applications/fa-1' },
      items: [{ webhooks: ['z'], amount: 1 }],
    };
    expect(withoutWebhookUrl(answer)).toEqual({
      financeApplicationId: 'fa-1',
      status: 'CREATED',
      links: { self: 'https://bank.example/applications/fa-1' },
      items: [{ amount: 1 }],
    });
    // The input is not changed (it may be the workflow's recorded activity result).
    expect(answer.webhookUrl).toContain(hash);
  });

  it('with the hash, also drops any string holding it, whatever its field is called', () => {
    const answer = {
      financeApplicationId: 'fa-2',
      notify: `https://paylater.example/webhooks/finance-applications/r/${hash}`,
      echo: [`https://paylater.example/r?hash=${hash}`, 'kept'],
      nested: { target: hash },
    };
    const stripped = withoutWebhookUrl(answer, hash);
    expect(stripped).toEqual({ financeApplicationId: 'fa-2', echo: ['kept'], nested: {} });
    expect(JSON.stringify(stripped)).not.toContain(hash);
  });
});
