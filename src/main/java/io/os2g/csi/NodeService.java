package io.os2g.csi;

import io.grpc.stub.StreamObserver;
import io.os2g.csi.v1.NodeGetCapabilitiesRequest;
import io.os2g.csi.v1.NodeGetCapabilitiesResponse;
import io.os2g.csi.v1.NodeGetInfoRequest;
import io.os2g.csi.v1.NodeGetInfoResponse;
import io.os2g.csi.v1.NodeGetVolumeStatsRequest;
import io.os2g.csi.v1.NodeGetVolumeStatsResponse;
import io.os2g.csi.v1.NodeGrpc;
import io.os2g.csi.v1.NodePublishVolumeRequest;
import io.os2g.csi.v1.NodePublishVolumeResponse;
import io.os2g.csi.v1.NodeServiceCapability;
import io.os2g.csi.v1.NodeUnpublishVolumeRequest;
import io.os2g.csi.v1.NodeUnpublishVolumeResponse;
import io.os2g.csi.v1.VolumeCapability;
import io.os2g.csi.v1.VolumeCondition;
import io.os2g.csi.v1.VolumeUsage;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CSI Node service without staging: the kubelet's NodePublishVolume and NodeUnpublishVolume for
 * each pod, checked here and carried out by {@link NodeVolumes}; volume stats with the mount's health.
 */
final class NodeService extends NodeGrpc.NodeImplBase {

    private static final Logger LOG = LoggerFactory.getLogger(NodeService.class);

    private final String nodeId;
    private final NodeVolumes volumes;

    NodeService(String nodeId, NodeVolumes volumes) {
        this.nodeId = nodeId;
        this.volumes = volumes;
    }

    @Override
    public void nodePublishVolume(NodePublishVolumeRequest request, StreamObserver<NodePublishVolumeResponse> answer) {
        call(answer, NodePublishVolumeResponse.getDefaultInstance(), () -> {
            required("volume_id", request.getVolumeId());
            Path target = target("target_path", request.getTargetPath());
            if (!request.hasVolumeCapability()) {
                throw CsiException.invalid("volume_capability is required");
            }
            VolumeCapability capability = request.getVolumeCapability();
            if (capability.hasBlock()) {
                throw CsiException.invalid("os2g volumes are file systems: a block volume cannot be published");
            }
            if (!capability.hasMount()) {
                throw CsiException.invalid("volume_capability.access_type is required (mount)");
            }
            if (!capability.hasAccessMode() || capability.getAccessMode().getMode() == VolumeCapability.AccessMode.Mode.UNKNOWN) {
                throw CsiException.invalid("volume_capability.access_mode is required");
            }
            MountFlags flags = MountFlags.parse(capability.getMount().getMountFlagsList());
            volumes.publish(VolumeRequest.of(request.getVolumeId(), target, request.getReadonly() || readOnlyMode(capability),
                    request.getVolumeContextMap(), flags, request.getSecretsMap()));
        });
    }

    /** Access modes that promise no writer. */
    private static boolean readOnlyMode(VolumeCapability capability) {
        VolumeCapability.AccessMode.Mode mode = capability.getAccessMode().getMode();
        return mode == VolumeCapability.AccessMode.Mode.SINGLE_NODE_READER_ONLY
                || mode == VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY;
    }

    @Override
    public void nodeUnpublishVolume(NodeUnpublishVolumeRequest request, StreamObserver<NodeUnpublishVolumeResponse> answer) {
        call(answer, NodeUnpublishVolumeResponse.getDefaultInstance(), () -> {
            required("volume_id", request.getVolumeId());
            volumes.unpublish(request.getVolumeId(), target("target_path", request.getTargetPath()));
        });
    }

    /**
     * The usage and condition of a published volume; NOT_FOUND for any path where it is not published
     * (another volume's, a relative or unknown one), INVALID_ARGUMENT only for a missing argument.
     */
    @Override
    public void nodeGetVolumeStats(NodeGetVolumeStatsRequest request, StreamObserver<NodeGetVolumeStatsResponse> answer) {
        try {
            required("volume_id", request.getVolumeId());
            required("volume_path", request.getVolumePath());
            Path path = Path.of(request.getVolumePath());
            if (!absoluteNormalized(path)) {
                throw new CsiException(io.grpc.Status.Code.NOT_FOUND, "volume " + request.getVolumeId() + " is not published at "
                        + request.getVolumePath() + " (not an absolute, normalized path)");
            }
            NodeVolumes.VolumeStats stats = volumes.stats(request.getVolumeId(), path);
            NodeGetVolumeStatsResponse.Builder response = NodeGetVolumeStatsResponse.newBuilder();
            if (stats.problem() == null) {
                response.addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES).setTotal(stats.total())
                        .setAvailable(stats.available()).setUsed(Math.max(0, stats.total() - stats.available())));
            }
            response.setVolumeCondition(VolumeCondition.newBuilder().setAbnormal(stats.problem() != null)
                    .setMessage(stats.problem() == null ? "mounted and answering" : stats.problem()));
            answer.onNext(response.build());
            answer.onCompleted();
        } catch (CsiException e) {
            answer.onError(e.status().asRuntimeException());
        }
    }

    @Override
    public void nodeGetCapabilities(NodeGetCapabilitiesRequest request, StreamObserver<NodeGetCapabilitiesResponse> answer) {
        answer.onNext(NodeGetCapabilitiesResponse.newBuilder()
                .addCapabilities(rpc(NodeServiceCapability.RPC.Type.GET_VOLUME_STATS))
                .addCapabilities(rpc(NodeServiceCapability.RPC.Type.VOLUME_CONDITION))
                .build());
        answer.onCompleted();
    }

    private static NodeServiceCapability rpc(NodeServiceCapability.RPC.Type type) {
        return NodeServiceCapability.newBuilder().setRpc(NodeServiceCapability.RPC.newBuilder().setType(type)).build();
    }

    @Override
    public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> answer) {
        answer.onNext(NodeGetInfoResponse.newBuilder().setNodeId(nodeId).build()); // no volume limit, no topology
        answer.onCompleted();
    }

    @FunctionalInterface
    private interface Call {
        void run() throws CsiException;
    }

    /** Runs {@code call} and answers {@code done}, or the gRPC status of its failure. */
    private static <T> void call(StreamObserver<T> answer, T done, Call call) {
        try {
            call.run();
        } catch (CsiException e) {
            LOG.warn("{}: {}", e.code(), e.getMessage());
            answer.onError(e.status().asRuntimeException());
            return;
        } catch (RuntimeException e) {
            LOG.error("node call failed", e);
            answer.onError(io.grpc.Status.INTERNAL.withDescription(String.valueOf(e.getMessage())).withCause(e).asRuntimeException());
            return;
        }
        answer.onNext(done);
        answer.onCompleted();
    }

    private static void required(String field, String value) throws CsiException {
        if (value.isEmpty()) {
            throw CsiException.invalid(field + " is required");
        }
    }

    private static Path target(String field, String value) throws CsiException {
        required(field, value);
        Path path = Path.of(value);
        if (!absoluteNormalized(path)) {
            throw CsiException.invalid(field + " must be an absolute, normalized path: " + value);
        }
        return path;
    }

    private static boolean absoluteNormalized(Path path) {
        return path.isAbsolute() && path.normalize().equals(path);
    }
}
