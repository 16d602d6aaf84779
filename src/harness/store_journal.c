/*
 * store_journal.c: which journal mode a database gets, from the file system it lives on
 * (docs/cluster.md, "Where the database lives").
 *
 * SQLite's WAL keeps its index in a shared-memory file (-shm) that every connection maps: on a
 * network file system a reader on another host (aimsweep status or query on a login node while
 * a compute node writes) cannot share that memory, which SQLite says WAL does not support. There
 * the rollback journal (journal_mode=DELETE) is used: readers and the writer take file locks
 * instead. The file system is told by statfs's f_type; store_journal_override (aimsweep run
 * --journal) or AIMSWEEP_JOURNAL (wal, delete or auto) decide instead when set.
 */
#include "aimsweep/harness/store.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

const char *store_journal_override;

/* File systems whose files other hosts share. */
static const struct {
    unsigned long magic;
    const char *name;
} network_fs[] = {{0x6969UL, "NFS"},          {0x0BD00BD0UL, "Lustre"}, {0x47504653UL, "GPFS"},
                  {0x19830326UL, "BeeGFS"},   {0x00C36400UL, "CephFS"}, {0xFF534D42UL, "CIFS"},
                  {0xFE534D42UL, "SMB2"},     {0x517BUL, "SMB"},        {0x5346414FUL, "AFS"},
                  {0x20030528UL, "OrangeFS"}, {0x01161970UL, "GFS2"},   {0x7461636FUL, "OCFS2"},
                  {0x01021997UL, "9p"},       {0x65735546UL, "FUSE"},   {0x013111A8UL, "IBRIX"},
                  {0xAAD7AAEAUL, "PanFS"}};

const char *store_fs_network(unsigned long magic)
{
    for (size_t i = 0; i < sizeof network_fs / sizeof network_fs[0]; i++)
        if (network_fs[i].magic == magic)
            return network_fs[i].name;
    return NULL;
}

const char *store_journal_mode(const char *path, char *why, size_t n)
{
    const char *o = store_journal_override ? store_journal_override : getenv("AIMSWEEP_JOURNAL");
    if (o && *o && strcmp(o, "auto") != 0) {
        if (strcmp(o, "wal") != 0 && strcmp(o, "delete") != 0) {
            snprintf(why, n, "journal mode '%s': must be wal, delete or auto", o);
            return NULL;
        }
        snprintf(why, n, "%s, as asked", o);
        return o;
    }
    char *copy = strdup(path);
    struct statfs fs;
    int bad = !copy || statfs(dirname(copy), &fs) != 0;
    free(copy);
    if (bad) {
        snprintf(why, n, "wal (the file system could not be told)");
        return "wal";
    }
    const char *net = store_fs_network((unsigned long)fs.f_type);
    if (net) {
        snprintf(why, n, "delete (the rollback journal: the database is on %s)", net);
        return "delete";
    }
    snprintf(why, n, "wal (a local file system, type 0x%lx)", (unsigned long)fs.f_type);
    return "wal";
}
