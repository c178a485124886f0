import { z } from 'zod';
import type {
  ApplicationStatusResponse,
  BankErrorBody,
  CreateApplicationResponse,
  RefreshResponse,
  TokenResponse,
} from '../../shared/bank-wire';

/**
 * Runtime checks of the bank's answers (src/shared/bank-wire.ts holds the decisions behind each shape).
 * Every schema is loose: fields the bank adds are kept and passed on, only the fields we rely on are required.
 */

/** Section 2. scope is not required: we never branch on it, and some servers omit it. */
export const tokenResponseSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().refine((t) => t.toLowerCase() === 'bearer', { message: 'token_type must be Bearer' }),
  expires_in: z.number().positive(),
  scope: z.string().optional(),
});

export const createApplicationResponseSchema = z.looseObject({
  financeApplicationId: z.string().min(1),
  status: z.string().optional(),
});

export const applicationStatusResponseSchema = z.looseObject({
  status: z.string().min(1),
  financeApplicationId: z.string().optional(),
  updatedAt: z.string().optional(),
});

export const refreshResponseSchema = z.looseObject({
  taskId: z.string().min(1),
});

/** Section 7 leaves error bodies open: read `{ error, message }` when it is there, never require it. */
export const bankErrorBodySchema = z.looseObject({
  error: z.string().optional(),
  message: z.string().optional(),
});

// Compile-time check that each schema's output is the wire type the rest of the code uses.
type Assignable<T, _U extends T> = true;
export type _SchemaChecks = [
  Assignable<Omit<TokenResponse, 'scope'>, z.infer<typeof tokenResponseSchema>>,
  Assignable<CreateApplicationResponse, z.infer<typeof createApplicationResponseSchema>>,
  Assignable<ApplicationStatusResponse, z.infer<typeof applicationStatusResponseSchema>>,
  Assignable<RefreshResponse, z.infer<typeof refreshResponseSchema>>,
  Assignable<BankErrorBody, z.infer<typeof bankErrorBodySchema>>,
];

/** Short, token-free description of why a body failed its schema (paths and messages only, no values). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}
