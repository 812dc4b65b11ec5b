// How both SQLite connections' statements take a LIMIT.

/**
 * A LIMIT given as a parameter. SQLite plans with the value bound to a bare
 * `LIMIT ?`, so each call that binds it (node:sqlite binds on every call)
 * prepares the statement again. A subquery's value the planner does not
 * read; the plan is the same.
 */
export const LIMIT_PARAMETER = 'LIMIT (SELECT ?)'
