#pragma once
// This process's file descriptors.

namespace cnnpar {

/** Closes `fd` and every other descriptor of this process open on the same file (device and
 *  inode) for the same access (read, write), such as its duplicates: a pipe's reader then sees
 *  the end of the pipe even where a launcher left copies of its write end open. The other end
 *  of a pipe stays open. Linux (/proc/self/fd); elsewhere only `fd` is closed. */
void close_every_copy(int fd);

}  // namespace cnnpar
