#include "CHeraldSQLite.h"
#include "sqlite_nio_sqlite3.h"

int herald_sqlite3_enable_stable_plans(void *db) {
    int enabled = 0;
    int result = sqlite_nio_sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, &enabled);
    if (result == SQLITE_OK && !enabled) {
        return SQLITE_ERROR;
    }
    return result;
}
