/* The number of elements of an array (not of a pointer). */
#ifndef ESV_NELEM_H
#define ESV_NELEM_H

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

#endif
