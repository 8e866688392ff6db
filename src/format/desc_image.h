/*
 * format/desc_image.h
 *		The stored image of a state descriptor (format/desc_image.c): WAL
 *		records of new states and RocksDB's copies hold it.
 */
#ifndef STATE_BACKEND_DESC_IMAGE_H
#define STATE_BACKEND_DESC_IMAGE_H

#include "lib/stringinfo.h"

#include "common/types.h"

/* The version of the image written; a reader knows every earlier one. */
#define STATE_DESC_IMAGE_VERSION	6		/* 2: "transactional" at the end; 3: timers;
											 * 4: windows; 5: watermarks from the
											 * data, late functions,
											 * emit tables; 6: the
											 * descriptor's version */

extern void state_desc_image_put(StringInfo out, const StateDesc *d);
extern bool state_desc_image_get(StateDesc *d, const char *img, Size len);

#endif							/* STATE_BACKEND_DESC_IMAGE_H */
