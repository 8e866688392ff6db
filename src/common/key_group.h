/*
 * common/key_group.h
 *		Hash of a key image and its key group.
 */
#ifndef STATE_BACKEND_KEY_GROUP_H
#define STATE_BACKEND_KEY_GROUP_H

extern uint32 key_image_hash(const char *image, uint32 len);
extern int	key_group_for_hash(uint32 hash, int max_parallelism);

#endif							/* STATE_BACKEND_KEY_GROUP_H */
