#ifndef HERALD_C_SQLITE_H
#define HERALD_C_SQLITE_H

/// Turns on SQLite's query planner stability guarantee on `db` (an `sqlite3 *`): plans no longer
/// depend on bound values, so a kept statement is never compiled again because a parameter
/// changed. `sqlite3_db_config` takes variable arguments, which Swift cannot pass.
/// Returns SQLite's result code.
int herald_sqlite3_enable_stable_plans(void *db);

#endif
