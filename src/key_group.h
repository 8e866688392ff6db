/*
 * key_group.h
 *		Hash of a key image and its key group.
 */
#ifndef KEY_GROUP_H
#define KEY_GROUP_H

extern uint32 key_image_hash(const char *image, uint32 len);
extern int	key_group_for_hash(uint32 hash, int max_parallelism);

#endif							/* KEY_GROUP_H */
