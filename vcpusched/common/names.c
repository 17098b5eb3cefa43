/* SPDX-License-Identifier: ISC */
/*
 * names.c - the name rule (names.h).
 */
#include <string.h>

#include "names.h"

bool
names_char_ok(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("_.:+@-", c) != NULL);
}

bool
names_key_char_ok(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool
names_valid(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n >= VS_NAME_SIZE)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!names_char_ok((unsigned char)name[i]))
            return false;
    return true;
}

bool
names_key_valid(const char *key)
{
    size_t n = strlen(key);

    if (n == 0 || n >= VS_KEY_SIZE)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!names_key_char_ok((unsigned char)key[i]))
            return false;
    return true;
}
