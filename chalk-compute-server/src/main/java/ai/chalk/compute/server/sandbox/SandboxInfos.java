package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.server.store.SandboxRecord;

/** Renders sandbox records as the v1 wire type. */
final class SandboxInfos {

    private SandboxInfos() {
    }

    static SandboxInfo v1(SandboxRecord r) {
        SandboxInfo.Builder b = SandboxInfo.newBuilder()
                .setId(r.id())
                .setState(r.state().name())
                .setCreatedAt(r.createdAt().toString());
        r.name().ifPresent(b::setName);
        r.statusMessage().ifPresent(b::setStatusMessage);
        return b.build();
    }
}
