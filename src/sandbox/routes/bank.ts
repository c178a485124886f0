import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { BANK_SCOPE, type CreateApplicationRequest, type TokenResponse } from '../../shared/bank-wire';
import { apiGuard, type ApiGuardDeps } from '../api-faults';
import type { Applications } from '../applications';
import type { Consents } from '../consents';
import type { TokenStore } from '../tokens';

export interface BankRouteDeps extends ApiGuardDeps {
  clientId: string;
  clientSecret: string;
  tokens: TokenStore;
  applications: Applications;
  consents: Consents;
  countTokenRequest: () => void;
}

const fail = (res: Response, status: number, error: string, message: string): void => {
  res.status(status).json({ error, message });
};

const isHttpUrl = (value: unknown): value is string => {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const jsonOnly = (): RequestHandler[] => [
  (req, res, next) => {
    if (!req.is('application/json'))
      return fail(res, 415, 'unsupported_media_type', 'Content-Type must be application/json');
    next();
  },
  express.json({ limit: '100kb' }),
];

/**
 * Bearer-token check of every banking-API route (docs/bank-interface.md section 5). The token is accepted in the
 * Authorization header only. Decision: a token in the query string (`access_token`, RFC 6750 2.3) is answered
 * 400 invalid_request, even alongside a valid header: the document discourages it because URIs end up in logs,
 * and a strict peer makes our client prove it never does it.
 */
function requireToken(tokens: TokenStore): RequestHandler {
  return (req, res, next) => {
    if (Object.prototype.hasOwnProperty.call(req.query, 'access_token')) {
      return fail(
        res,
        400,
        'invalid_request',
        'Send the access token in the Authorization header, not in the query string',
      );
    }
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(req.get('authorization') ?? '');
    const problem = match ? tokens.check(match[1]!) : 'missing';
    if (problem === null) return next();
    res.set('WWW-Authenticate', 'Bearer realm="bank-sandbox", error="invalid_token"');
    const message =
      problem === 'missing'
        ? 'A Bearer access token is required in the Authorization header'
        : problem === 'expired'
          ? 'The access token expired'
          : 'The access token is not valid (unknown or revoked)';
    fail(res, 401, 'invalid_token', message);
  };
}

export function bankRoutes(deps: BankRouteDeps): Router {
  const router = express.Router();
  const auth = requireToken(deps.tokens);

  // 4.1: form-encoded client-credentials grant; error codes as in RFC 6749 5.2.
  router.post(
    '/oauth/v2/token',
    (_req, _res, next) => {
      deps.countTokenRequest();
      next();
    },
    apiGuard('token', deps),
    (req, res, next) => {
      if (!req.is('application/x-www-form-urlencoded')) {
        return fail(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
      }
      next();
    },
    express.urlencoded({ extended: false, limit: '16kb' }),
    (req, res) => {
      const body: Record<string, unknown> = isPlainObject(req.body) ? req.body : {};
      const param = (name: string): string | undefined => (typeof body[name] === 'string' ? body[name] : undefined);
      const [clientId, clientSecret, grantType, scope] = ['client_id', 'client_secret', 'grant_type', 'scope'].map(
        param,
      );
      const missing = ['client_id', 'client_secret', 'grant_type', 'scope'].filter((name) => !param(name));
      if (missing.length > 0)
        return fail(res, 400, 'invalid_request', `Missing or repeated parameter: ${missing.join(', ')}`);
      if (grantType !== 'client_credentials') {
        return fail(res, 400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported');
      }
      if (clientId !== deps.clientId || clientSecret !== deps.clientSecret) {
        return fail(res, 401, 'invalid_client', 'Client authentication failed');
      }
      if (scope !== BANK_SCOPE) return fail(res, 400, 'invalid_scope', `The only scope is ${BANK_SCOPE}`);
      const { token, expiresIn } = deps.tokens.issue();
      const answer: TokenResponse = {
        access_token: token,
        token_type: 'Bearer',
        expires_in: expiresIn,
        scope: BANK_SCOPE,
      };
      res.set('Cache-Control', 'no-store').status(200).json(answer);
    },
  );

  // 4.2
  router.post('/applications', apiGuard('createApplication', deps), auth, ...jsonOnly(), async (req, res) => {
    const body: unknown = req.body;
    if (!isPlainObject(body)) return fail(res, 400, 'invalid_request', 'The body must be a JSON object');
    if (body.redirectUrl === undefined) return fail(res, 400, 'invalid_request', 'redirectUrl is required');
    if (!isHttpUrl(body.redirectUrl))
      return fail(res, 400, 'invalid_request', 'redirectUrl must be an absolute http(s) URL');
    if (body.webhookUrl !== undefined && !isHttpUrl(body.webhookUrl)) {
      return fail(res, 400, 'invalid_request', 'webhookUrl must be an absolute http(s) URL');
    }
    const record = await deps.applications.create(body as CreateApplicationRequest);
    res.status(201).json({
      financeApplicationId: record.financeApplicationId,
      status: record.status,
      createdAt: record.createdAt,
      redirectUrl: body.redirectUrl,
      ...(body.webhookUrl !== undefined ? { webhookUrl: body.webhookUrl } : {}),
    });
  });

  // 4.3
  router.get('/applications/:applicationId/status', apiGuard('getStatus', deps), auth, (req, res) => {
    const record = deps.applications.get(String(req.params.applicationId));
    if (!record) return fail(res, 404, 'not_found', 'Unknown finance application');
    res.json({ financeApplicationId: record.financeApplicationId, status: record.status, updatedAt: record.updatedAt });
  });

  // 4.4: consentId in a JSON body (bank-wire.ts decision).
  router.put('/refresh', apiGuard('refresh', deps), auth, ...jsonOnly(), async (req, res) => {
    const body: unknown = req.body;
    const consentId = isPlainObject(body) ? body.consentId : undefined;
    if (typeof consentId !== 'string' || consentId.trim() === '' || consentId.length > 256) {
      return fail(res, 400, 'invalid_request', 'consentId (non-empty string) is required');
    }
    const task = await deps.consents.startRefresh(consentId);
    res.status(202).json({ taskId: task.taskId, consentId });
  });

  return router;
}

/** JSON errors for body-parser failures and anything unexpected; never an HTML page. */
export function errorHandler(logger: { error: (obj: object, msg: string) => void }) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      fail(res, status, status === 413 ? 'payload_too_large' : 'invalid_request', (err as Error).message);
      return;
    }
    logger.error({ err }, 'sandbox error');
    if (!res.headersSent) fail(res, 500, 'server_error', 'Unexpected sandbox error');
  };
}
