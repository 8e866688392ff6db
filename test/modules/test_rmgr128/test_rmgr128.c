/*
 * test/modules/test_rmgr128/test_rmgr128.c
 *		An extension in development as PostgreSQL allows one: it registers
 *		WAL resource manager id 128 (RM_EXPERIMENTAL_ID) and writes records
 *		of its own under it, with the info bits and data a test gives
 *		(test_rmgr128_emit), for test/t/064_foreign_rmgr_128.pl.  Its redo
 *		does nothing.
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "fmgr.h"
#include "utils/pg_lsn.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(test_rmgr128_emit);

static void
rmgr128_redo(XLogReaderState *record)
{
}

static void
rmgr128_desc(StringInfo buf, XLogReaderState *record)
{
	appendStringInfo(buf, "%u bytes", XLogRecGetDataLen(record));
}

static const char *
rmgr128_identify(uint8 info)
{
	return "RECORD";
}

static RmgrData rmgr128 = {
	.rm_name = "test_rmgr128",
	.rm_redo = rmgr128_redo,
	.rm_desc = rmgr128_desc,
	.rm_identify = rmgr128_identify,
};

void
_PG_init(void)
{
	RegisterCustomRmgr(RM_EXPERIMENTAL_ID, &rmgr128);
}

/*
 * test_rmgr128_emit(info int, data bytea) writes one record under id 128
 * with info's high four bits and data, flushed; returns its end.
 */
Datum
test_rmgr128_emit(PG_FUNCTION_ARGS)
{
	int32		info = PG_GETARG_INT32(0);
	bytea	   *data = PG_GETARG_BYTEA_PP(1);
	XLogRecPtr	end;

	XLogBeginInsert();
	XLogRegisterData(VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data));
	end = XLogInsert(RM_EXPERIMENTAL_ID, (uint8) (info & XLR_RMGR_INFO_MASK));
	XLogFlush(end);
	PG_RETURN_LSN(end);
}
