import type { ErrorRequestHandler } from 'express';
import { loggablePath } from '../../../security/redaction';
import { HttpError, PROBLEM_TITLES, ProblemType, type ProblemTypeUri } from '../../problem-details';
import { errorPage } from './views';
import { ConsoleError, isFragment, page, sessionOf, SIGN_IN_LINK, type ConsoleContext } from './context';

/**
 * The console answers its errors as pages (or plain text to the live script), never as the facade's JSON; a
 * budget's or the sign-in's 429 keeps its Retry-After and RateLimit fields.
 */
export function consoleErrors(ctx: ConsoleContext): ErrorRequestHandler {
  const { deps } = ctx;
  return (err: unknown, req, res, next) => {
    if (res.headersSent) return next(err);
    // The browser left (a live page closed or navigated away mid-wait): nobody to answer, and nothing went wrong.
    // (Not req.destroyed: a request whose body was read is destroyed too, and would never be answered.)
    if (res.destroyed || res.closed || req.socket.destroyed) {
      deps.logger.debug({ path: loggablePath(req.path) }, 'console: the browser left before the answer');
      return;
    }
    const refused = err instanceof HttpError && err.status < 500 ? err : undefined;
    const status = err instanceof ConsoleError ? err.status : (refused?.status ?? 500);
    if (status === 500) deps.logger.error({ err }, 'console request failed');
    if (refused?.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(refused.retryAfterSeconds));
    for (const [name, value] of Object.entries(refused?.headers ?? {})) res.setHeader(name, value);
    if (refused?.problemType === ProblemType.TooManyWrongKeys) {
      const minutes = Math.max(1, Math.ceil(Number(res.getHeader('Retry-After') ?? 60) / 60));
      const message = `Too many failed sign-ins from this address: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`;
      return page(res, 429, 'Too many sign-in attempts', errorPage(message, SIGN_IN_LINK));
    }
    const message =
      status === 500
        ? 'Something went wrong; try again'
        : status === 429 && refused
          ? busy(refused, Number(res.getHeader('Retry-After') ?? 1))
          : (err as Error).message;
    if (isFragment(req)) return void res.status(status).type('text/plain').send(message);
    const session = sessionOf(ctx, req);
    page(res, status, message, errorPage(message), session);
  };
}

/** A budget's refusal in the console's words: what ran out, and when to try again. */
function busy(refused: HttpError, retryAfterSeconds: number): string {
  const title = PROBLEM_TITLES[refused.problemType as ProblemTypeUri] ?? 'Too many requests';
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return `${title} for this merchant: try again in ${seconds} second${seconds === 1 ? '' : 's'}`;
}
