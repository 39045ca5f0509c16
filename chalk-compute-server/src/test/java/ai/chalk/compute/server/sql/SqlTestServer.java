package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.auth.TrustedCallers;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.grpc.FailuresToStatus;
import ai.chalk.compute.server.http.HttpPort;
import ai.chalk.compute.server.http.LinkSigner;
import ai.chalk.compute.server.http.Transfers;
import ai.chalk.compute.server.store.Database;
import ai.chalk.compute.server.store.SqlJobStore;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.UUID;

/**
 * The SQL service as the server runs it, for tests: its store in a data directory (so a restart finds its jobs), the
 * blob store, real HTTP transfers with signed links, in-process and TCP transports. The datasets are whatever Parquet
 * files a test names; the dataset store wires the same {@link DatasetTables} in the server.
 */
public final class SqlTestServer implements AutoCloseable {

    public final String inProcessName = "sql-test-" + UUID.randomUUID();
    public final SqlQueries queries;
    private final Database database;
    private final HttpPort http;
    private final Server inProcess;
    private final Server tcp;

    public SqlTestServer(Path dataDir, DatasetTables tables, SqlOptions options, Duration linkTtl) throws IOException {
        this(dataDir, tables, options, linkTtl, -1);
    }

    /** A server whose blob store keeps {@code diskReserve} bytes of the disk free (-1: the default). */
    public SqlTestServer(Path dataDir, DatasetTables tables, SqlOptions options, Duration linkTtl, long diskReserve)
            throws IOException {
        database = Database.open(dataDir);
        BlobStore blobs = new BlobStore(dataDir.resolve("blobs"), diskReserve);
        http = HttpPort.open("127.0.0.1", 0);
        Transfers transfers = new Transfers(
                blobs, LinkSigner.load(dataDir.resolve("state"), Clock.systemUTC()), Clock.systemUTC(), http::url);
        transfers.serveOn(http);
        queries = new SqlQueries(
                new SqlEngine(tables, options, dataDir.resolve("sql")), new SqlJobStore(database), blobs);
        var service = ServerInterceptors.intercept(
                new SqlServiceV1(queries, new TransferLinks(transfers, linkTtl)), new FailuresToStatus());
        inProcess = InProcessServerBuilder.forName(inProcessName)
                .addService(ServerInterceptors.intercept(service, new TrustedCallers(Caller.Kind.EMBEDDED)))
                .build()
                .start();
        tcp = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .addService(ServerInterceptors.intercept(service, new TrustedCallers(Caller.Kind.UNAUTHENTICATED)))
                .build()
                .start();
    }

    /** {@code host:port} of the TCP transport. */
    public String tcpTarget() {
        return "127.0.0.1:" + tcp.getPort();
    }

    @Override
    public void close() {
        inProcess.shutdownNow();
        tcp.shutdownNow();
        queries.close();
        http.close();
        database.close();
    }
}
