/* SPDX-License-Identifier: ISC */
#include "credit_testutil.h"
int
main(void)
{
    return 0;
}
