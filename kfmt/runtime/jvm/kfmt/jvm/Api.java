package kfmt.jvm;

/** One of Kafka's APIs as kfmt.protocol.apis has it (generated into kfmt.jvm.gen.Protocol.api from the schemas):
 * its key, name, the versions read ({@code lo}-{@code hi}), the first flexible version (-1: none), and the schemas of
 * its request's and response's bodies. Kafka's rules for the header a message of a version has are here, once. */
public record Api(int key, String name, int lo, int hi, int flexibleFrom, String request, String response) {
    /** ControlledShutdown: its version 0 has request header v0 (no client id), the only message that does. */
    static final int CONTROLLED_SHUTDOWN = 7;
    /** ApiVersions: its response header is always v0. */
    static final int API_VERSIONS = 18;

    boolean has(int version) {
        return version >= lo && version <= hi;
    }

    boolean flexible(int version) {
        return flexibleFrom >= 0 && version >= flexibleFrom;
    }

    /** Kafka's ApiMessageType.requestHeaderVersion: 2 when flexible, else 1; ControlledShutdown v0 has 0. */
    int requestHeaderVersion(int version) {
        if (key == CONTROLLED_SHUTDOWN && version == 0) return 0;
        return flexible(version) ? 2 : 1;
    }

    /** Kafka's ApiMessageType.responseHeaderVersion: 1 when flexible, else 0; ApiVersions always 0. */
    int responseHeaderVersion(int version) {
        if (key == API_VERSIONS) return 0;
        return flexible(version) ? 1 : 0;
    }
}
