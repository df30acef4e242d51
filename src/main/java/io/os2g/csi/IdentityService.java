package io.os2g.csi;

import com.google.protobuf.BoolValue;
import io.grpc.stub.StreamObserver;
import io.os2g.csi.v1.GetPluginCapabilitiesRequest;
import io.os2g.csi.v1.GetPluginCapabilitiesResponse;
import io.os2g.csi.v1.GetPluginInfoRequest;
import io.os2g.csi.v1.GetPluginInfoResponse;
import io.os2g.csi.v1.IdentityGrpc;
import io.os2g.csi.v1.ProbeRequest;
import io.os2g.csi.v1.ProbeResponse;

/** The CSI Identity service: the driver's name and version; no controller, so no plugin capability. */
final class IdentityService extends IdentityGrpc.IdentityImplBase {

    private final String version;

    IdentityService(String version) {
        this.version = version;
    }

    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> answer) {
        answer.onNext(GetPluginInfoResponse.newBuilder().setName(CsiServer.DRIVER_NAME).setVendorVersion(version).build());
        answer.onCompleted();
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request, StreamObserver<GetPluginCapabilitiesResponse> answer) {
        answer.onNext(GetPluginCapabilitiesResponse.getDefaultInstance()); // a node plugin only: static and inline volumes
        answer.onCompleted();
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> answer) {
        answer.onNext(ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build());
        answer.onCompleted();
    }
}
