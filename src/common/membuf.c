/*
 * common/membuf.c
 *		Growing a StringInfo without raising an error; see membuf.h.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/membuf.h"

/*
 * membuf_room makes room for n more bytes at the end of buf and returns
 * true, or returns false, raising nothing, when memory is short or buf
 * would pass 1 GB.  buf is unchanged then.
 */
bool
membuf_room(StringInfo buf, Size n)
{
	Size		need = (Size) buf->len + n + 1;
	Size		newlen;
	char	   *p;

	if (need <= (Size) buf->maxlen)
		return true;
	if (need > MaxAllocSize)
		return false;
	newlen = Min(Max(need, 2 * (Size) buf->maxlen), MaxAllocSize);
	p = MemoryContextAllocExtended(GetMemoryChunkContext(buf->data), newlen,
								   MCXT_ALLOC_NO_OOM);
	if (p == NULL)
		return false;
	memcpy(p, buf->data, (Size) buf->len + 1);
	pfree(buf->data);
	buf->data = p;
	buf->maxlen = (int) newlen;
	return true;
}

/*
 * membuf_shrink gives back the memory of an empty buffer that grew past
 * "keep" bytes (one large message must not pin its size for good).
 */
void
membuf_shrink(StringInfo buf, Size keep)
{
	MemoryContext cxt;
	char	   *small;

	if (buf->len != 0 || (Size) buf->maxlen <= keep)
		return;
	cxt = GetMemoryChunkContext(buf->data);
	small = MemoryContextAllocExtended(cxt, 1024, MCXT_ALLOC_NO_OOM);
	if (small == NULL)
		return;					/* keep the large one */
	pfree(buf->data);
	buf->data = small;
	buf->maxlen = 1024;
	buf->data[0] = '\0';
	buf->cursor = 0;
}
