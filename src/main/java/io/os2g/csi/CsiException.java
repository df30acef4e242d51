package io.os2g.csi;

import io.grpc.Status;

/** A call the node plugin refuses or cannot carry out: the gRPC code the CSI spec gives it, and why. */
public final class CsiException extends Exception {

    private final Status.Code code;

    public CsiException(Status.Code code, String message) {
        super(message);
        this.code = code;
    }

    public CsiException(Status.Code code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    public Status.Code code() {
        return code;
    }

    /** An argument the caller gave (a volume attribute, a secret, a path) that cannot be used. */
    public static CsiException invalid(String message) {
        return new CsiException(Status.Code.INVALID_ARGUMENT, message);
    }

    Status status() {
        return Status.fromCode(code).withDescription(getMessage());
    }
}
