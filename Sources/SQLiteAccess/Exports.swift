// SQLite's values (`DatabaseValue`, `Row`) live below this module, where the renderers can use
// them without SQLite; whoever imports SQLiteAccess has them as before.
@_exported import SQLiteValues
