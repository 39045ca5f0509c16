package com.acme.functions;

/** A bean with no functions. */
public class Plain {}
