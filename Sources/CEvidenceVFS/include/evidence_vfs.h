#ifndef STORELENS_EVIDENCE_VFS_H
#define STORELENS_EVIDENCE_VFS_H

/// Registers the two read-only VFSes (once; later calls return the first result):
/// "storelens-evidence" (main file and -wal, the WAL applied) and "storelens-evidence-nowal"
/// (the main file alone: the -wal is never opened). SQLITE_OK or an SQLite error code.
int storelens_evidence_vfs_register(void);

/// How many writes, truncates, syncs, deletes or -shm file uses SQLite asked of these VFSes and
/// was refused, since the process started (a normal read asks none).
long long storelens_evidence_vfs_refused(void);

/// How many files the VFSes opened (the tests' proof that the evidence went through them).
long long storelens_evidence_vfs_opened(void);

/// Both counts for the calling thread alone (exact while other threads use the VFSes too).
long long storelens_evidence_vfs_refused_on_this_thread(void);
long long storelens_evidence_vfs_opened_on_this_thread(void);

#endif
