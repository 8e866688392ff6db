/*
 * common/key_group.h
 *		Hash of a key image and its key group; the key groups of a part
 *		when a state is split across servers.
 */
#ifndef STATE_BACKEND_KEY_GROUP_H
#define STATE_BACKEND_KEY_GROUP_H

extern uint32 key_image_hash(const char *image, uint32 len);
extern int	key_group_for_hash(uint32 hash, int max_parallelism);
extern void key_group_range_of_part(int max_parallelism, int parallelism, int part,
									int *first, int *last);
extern int	key_group_part(int max_parallelism, int parallelism, int key_group);

#endif							/* STATE_BACKEND_KEY_GROUP_H */
