// What a zod issue says, in a person's words, read from its structure (code, origin, bounds) and never from zod's
// English: "Too small: expected string to have >=1 characters" is "is required". Shared by the workflow editor's
// problems (workflow/problems.ts) and the schedule builder's (schedule-check.ts), which put the field's name before.
import type { z } from 'zod';

export type Issue = z.core.$ZodIssue;

export function plainIssue(issue: Issue): string {
  switch (issue.code) {
    case 'too_small':
      if (issue.origin === 'string')
        return Number(issue.minimum) <= 1 ? 'is required' : `needs at least ${issue.minimum} characters`;
      if (issue.origin === 'array')
        return Number(issue.minimum) <= 1 ? 'needs at least one entry' : `needs at least ${issue.minimum} entries`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `is too long (at most ${issue.maximum} characters)`;
      if (issue.origin === 'array') return `has too many entries (at most ${issue.maximum})`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_type':
      return /received undefined/.test(issue.message)
        ? 'is required'
        : `must be ${issue.expected === 'number' || issue.expected === 'int' ? 'a number' : `a ${issue.expected}`}`;
    case 'invalid_format':
      // The schema's own words where it has them ("a plain file name"); zod's defaults are not for people.
      if (!/^Invalid/.test(issue.message))
        return issue.message.startsWith('node ids')
          ? `is not a usable name: ${issue.message}`
          : `must be ${issue.message}`;
      return issue.format === 'uuid'
        ? 'must be chosen'
        : issue.format === 'email'
          ? 'must be an email address'
          : 'is not in the right form';
    case 'invalid_value':
      return `must be one of: ${issue.values.map(String).join(', ')}`;
    case 'invalid_union':
      return 'is not filled in completely';
    default:
      return issue.message;
  }
}
