package com.acme.fatjar.config;

/**
 * A greeting's first word.
 *
 * @param text the word
 */
public record Salutation(String text) {}
