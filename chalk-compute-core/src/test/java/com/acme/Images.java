package com.acme;

import ai.chalk.compute.image.Image;

/** Image factories shared by several classes. */
public final class Images {

    private Images() {}

    public static Image gpu() {
        return Image.base("nvidia/cuda:12.4.1-runtime-ubuntu22.04");
    }
}
