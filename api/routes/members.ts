// The people of a workspace: members and their roles, invitations by link (and email when SMTP is configured),
// and the audit log. Admins manage members; only an owner hands out or takes away ownership, and a workspace
// always keeps one owner.
import { Router, type Request } from 'express';
import { jsonSchema, list, nullable, obj, ref, ts, type Route } from '../openapi-schemas';
import { bodies } from '../request-bodies';
import { listMembers, listMembersPage } from '../../db/accounts';
import { listAudit } from '../../db/audit';
import type { Role } from '../../db/roles';
import { endOfBillingPeriod, planStatus, schedulePlanChange, setPlan } from '../../db/workspaces';
import { plans } from '../../model/plan';
import type { planChange } from '../../workflows/plan-change';
import { createInvitation, invitationColumns, invitationDays, revokeInvitation } from '../../db/invitations';
import { sendAccountMail } from '../account-mail';
import { auditRequest } from '../audit-request';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { jsonBody, param, parseBody } from '../validation';
import type { AccountDeps } from './accounts';
import { parseQuery, queries } from '../query-params';

/** The Temporal workflow holding a workspace's scheduled downgrade. */
export const planChangeId = (workspaceId: string) => `plan-change-${workspaceId}`;

export function memberRoutes(deps: AccountDeps): Router {
  const { knex } = deps;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);

  /** Ownership changes hands only through an owner: the role given and the role taken must be within reach. */
  const assertMayAssign = (req: Request, role: Role) => {
    const caller = req.auth!;
    if (role === 'owner' && caller.role !== 'owner') {
      throw new ApiError(403, 'role_forbidden', 'only an owner can make someone an owner');
    }
  };
  const audit = (req: Request, action: string, target: string, details: Record<string, unknown> = {}) =>
    auditRequest(knex, req, action, target, details);

  /**
   * The member a change is about (a new role, or removal when `role` is absent), from one read of the members:
   * refused when it would hand out or take away ownership without being an owner, or leave no owner.
   */
  const memberToChange = async (req: Request, userId: string, role?: Role) => {
    const members = await listMembers(knex, req.auth!.workspace.id);
    const member = members.find((m) => m.user_id === userId);
    if (!member) throw new ApiError(404, 'member_not_found', `no member ${userId} in this workspace`);
    if (role) assertMayAssign(req, role);
    if (member.role === 'owner') {
      assertMayAssign(req, 'owner');
      const owners = members.filter((m) => m.role === 'owner').length;
      if (role !== 'owner' && owners === 1) {
        throw new ApiError(409, 'last_owner', 'a workspace needs an owner: make someone else owner first');
      }
    }
    return member;
  };

  r.get('/members', requirePermission('read'), async (req, res) => {
    res.json(await listMembersPage(knex, req.auth!.workspace.id, parseQuery(queries.listMembers, req.query)));
  });

  r.patch('/members/:userId', requirePermission('admin'), ...body, async (req, res) => {
    const { role } = parseBody(bodies.changeRole, req.body);
    const ws = req.auth!.workspace.id;
    const member = await memberToChange(req, param(req, 'userId'), role);
    await knex('memberships').where({ workspace_id: ws, user_id: member.user_id }).update({ role });
    await audit(req, 'member.role_changed', member.email, { from: member.role, to: role });
    res.json({ ...member, role });
  });

  r.delete('/members/:userId', requirePermission('admin'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const member = await memberToChange(req, param(req, 'userId'));
    await knex.transaction(async (trx) => {
      await trx('memberships').where({ workspace_id: ws, user_id: member.user_id }).delete();
      // Their sessions stop showing this workspace at once; they stay signed in to any other.
      await trx('sessions').where({ user_id: member.user_id, workspace_id: ws }).update({ workspace_id: null });
    });
    await audit(req, 'member.removed', member.email, { role: member.role });
    res.status(204).end();
  });

  r.get('/invitations', requirePermission('admin'), async (req, res) => {
    const data = await knex('invitations')
      .where({ workspace_id: req.auth!.workspace.id })
      .orderBy('created_at', 'desc')
      .select(invitationColumns);
    res.json({ data, next_cursor: null });
  });

  r.post('/invitations', requirePermission('admin'), ...body, async (req, res) => {
    const input = parseBody(bodies.createInvitation, req.body);
    assertMayAssign(req, input.role);
    const { invitation, url } = await createInvitation(knex, {
      workspaceId: req.auth!.workspace.id,
      role: input.role,
      email: input.email,
      createdBy: req.auth!.user?.id,
      publicUrl: deps.links.publicUrl,
    });
    const emailed = input.email
      ? await sendAccountMail(deps, {
          to: input.email,
          subject: `You are invited to ${req.auth!.workspace.name} on Cadre`,
          text: `${req.auth!.actor} invites you to the workspace "${req.auth!.workspace.name}" as ${input.role}.\n\nJoin here (the link works for ${invitationDays} days, once):\n${url}`,
          key: `invite:${invitation.id}`,
        })
      : false;
    await audit(req, 'invitation.created', input.email ?? 'link', { role: input.role, emailed });
    res.status(201).json({ ...invitation, url, emailed });
  });

  r.delete('/invitations/:id', requirePermission('admin'), async (req, res) => {
    const id = param(req, 'id');
    if (!(await revokeInvitation(knex, req.auth!.workspace.id, id)))
      throw new ApiError(404, 'invitation_not_found', `no open invitation ${id} in this workspace`);
    await audit(req, 'invitation.revoked', id);
    res.status(204).end();
  });

  // Plans change in billing settings: an upgrade at once, a downgrade at the end of the billing period.
  r.put('/workspace/plan', requirePermission('owner'), ...body, async (req, res) => {
    const { plan } = parseBody(bodies.changePlan, req.body);
    const ws = req.auth!.workspace;
    const timer = deps.temporal.workflow.getHandle(planChangeId(ws.id));
    // Whatever was scheduled before, this request replaces it (terminated, not cancelled: at once, so the id is free).
    await timer.terminate('replaced by a newer plan request').catch(() => undefined);
    if (plans.indexOf(plan) >= plans.indexOf(ws.plan)) {
      await setPlan(knex, ws.id, plan);
    } else {
      const at = endOfBillingPeriod();
      await schedulePlanChange(knex, ws.id, plan, at);
      await deps.temporal.workflow.start<typeof planChange>('planChange', {
        workflowId: planChangeId(ws.id),
        taskQueue: deps.temporalConfig.taskQueue,
        args: [{ workspaceId: ws.id, plan, at: at.getTime() }],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
    }
    const status = await planStatus(knex, ws.id);
    await auditRequest(knex, req, 'plan.change_requested', ws.name, { from: ws.plan, to: plan, ...status });
    res.json(status);
  });

  r.get('/audit-log', requirePermission('admin'), async (req, res) => {
    if (req.auth!.workspace.plan === 'free') {
      throw new ApiError(403, 'plan_feature', 'the audit log comes with the Professional and Enterprise plans');
    }
    const q = parseQuery(queries.listAuditEvents, req.query);
    res.json(await listAudit(knex, req.auth!.workspace.id, { limit: q.limit, cursor: q.cursor, action: q.action }));
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const memberRouteDocs: Route[] = [
  {
    method: 'put',
    path: '/workspace/plan',
    id: 'changePlan',
    summary: "Change the workspace's plan (owner): an upgrade at once, a downgrade at the end of the billing period",
    scope: 'owner',
    body: jsonSchema(bodies.changePlan),
    ok: {
      200: obj({
        plan: { type: 'string' },
        pending_plan: nullable({ type: 'string' }),
        plan_changes_at: nullable(ts),
      }),
    },
    errors: [422],
  },
  {
    method: 'get',
    path: '/members',
    id: 'listMembers',
    summary: 'Members of the workspace and their roles, in the order they joined (?limit=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Member')) },
  },
  {
    method: 'patch',
    path: '/members/{userId}',
    id: 'changeMemberRole',
    summary: "Change a member's role (only an owner grants or removes ownership; one owner always remains)",
    scope: 'admin',
    body: jsonSchema(bodies.changeRole),
    ok: { 200: ref('Member') },
    errors: [409, 422],
  },
  {
    method: 'delete',
    path: '/members/{userId}',
    id: 'removeMember',
    summary: 'Remove a member from the workspace',
    scope: 'admin',
    ok: { 204: null },
    errors: [409],
  },
  {
    method: 'get',
    path: '/invitations',
    id: 'listInvitations',
    summary: 'Invitations of the workspace',
    scope: 'admin',
    ok: { 200: list(ref('Invitation')) },
  },
  {
    method: 'post',
    path: '/invitations',
    id: 'createInvitation',
    summary: 'Invite by link (emailed too when an address is given and SMTP is configured); valid 7 days, once',
    scope: 'admin',
    body: jsonSchema(bodies.createInvitation),
    ok: { 201: ref('Invitation') },
    errors: [422],
  },
  {
    method: 'delete',
    path: '/invitations/{id}',
    id: 'revokeInvitation',
    summary: 'Withdraw an open invitation',
    scope: 'admin',
    ok: { 204: null },
  },
  {
    method: 'get',
    path: '/audit-log',
    id: 'listAuditEvents',
    summary: 'Security and configuration events, newest first (Professional and Enterprise plans)',
    scope: 'admin',
    ok: { 200: list(ref('AuditEvent')) },
    errors: [400],
  },
];
