/**
 * Functions deployed by the command line's tests: a user's code, outside the SDK's packages, as a user's would be.
 */
@NullMarked
package com.example.cli;

import org.jspecify.annotations.NullMarked;
