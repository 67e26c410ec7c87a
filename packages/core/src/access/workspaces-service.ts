import { type Workspace, notFound } from '../common/index.js';
import { assertWorkspaceId, nowIso, reader, transact, type EngineContext } from '../context/index.js';

/**
 * Workspaces: every resource and key belongs to exactly one, and nothing crosses between them.
 * Creating a resource in a workspace creates the workspace if needed.
 */
export class WorkspacesService {
  constructor(private readonly ctx: EngineContext) {}

  /** Creates the workspace if it does not exist. */
  async ensure(id: string): Promise<Workspace> {
    assertWorkspaceId(id);
    return transact(this.ctx, (repos) => repos.workspaces.ensure(id, nowIso(this.ctx)));
  }

  /** One workspace (`not_found` if it was never used). */
  async get(id: string): Promise<Workspace> {
    const row = await reader(this.ctx).workspaces.get(id);
    if (!row) throw notFound('workspace', id);
    return row;
  }

  /** Every workspace, by id. */
  async list(): Promise<Workspace[]> {
    return reader(this.ctx).workspaces.list();
  }
}
