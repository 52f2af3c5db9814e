// Prepended to every hostile variant of solutions/03-race/reduce.cu.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
