import type { Db } from '../sql-helpers.js';

/** Row of `workspaces`. */
export interface WorkspaceRow {
  id: string;
  created_at: string;
}

/** Workspaces: the isolation boundary every other table is keyed by. */
export class WorkspacesRepo {
  constructor(private readonly db: Db) {}

  /** Creates the workspace if it does not exist; returns it either way. */
  async ensure(id: string, now: string): Promise<WorkspaceRow> {
    await this.create(id, now);
    return (await this.get(id))!;
  }

  /** Creates the workspace if it does not exist, without reading it back (the write paths' form). */
  async create(id: string, now: string): Promise<void> {
    await this.db('workspaces').insert({ id, created_at: now }).onConflict('id').ignore();
  }

  /** A workspace by id. */
  async get(id: string): Promise<WorkspaceRow | null> {
    return ((await this.db('workspaces').where({ id }).first()) as WorkspaceRow | undefined) ?? null;
  }

  /** Every workspace, by id. */
  async list(): Promise<WorkspaceRow[]> {
    return (await this.db('workspaces').orderBy('id')) as WorkspaceRow[];
  }
}
