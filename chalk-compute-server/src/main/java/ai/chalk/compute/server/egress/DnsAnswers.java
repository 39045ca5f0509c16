package ai.chalk.compute.server.egress;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.dns.DatagramDnsQuery;
import io.netty.handler.codec.dns.DatagramDnsResponse;
import io.netty.handler.codec.dns.DefaultDnsQuestion;
import io.netty.handler.codec.dns.DefaultDnsRawRecord;
import io.netty.handler.codec.dns.DnsOpCode;
import io.netty.handler.codec.dns.DnsQuestion;
import io.netty.handler.codec.dns.DnsRecordType;
import io.netty.handler.codec.dns.DnsResponseCode;
import io.netty.handler.codec.dns.DnsSection;
import java.net.Inet4Address;
import java.util.concurrent.CompletableFuture;

/**
 * The sandbox's resolver, on the proxy's address: a name the policy allows (listed in {@code allowed_hosts}, or
 * resolving into an allowed route) is answered with the proxy's own IPv4 address, so that a client that ignores the
 * proxy variables still lands on the proxy (ports 80 and 443), which checks the name again; every other name does not
 * exist (NXDOMAIN), and no name has an IPv6 address (the sandbox has no IPv6 route). The real addresses of names never
 * reach the sandbox: there would be no route to them anyway.
 */
final class DnsAnswers extends SimpleChannelInboundHandler<DatagramDnsQuery> {

    /** Short: a policy lives as long as its sandbox, and the answer is always the proxy. */
    static final long TTL_SECONDS = 30;

    private final SandboxLink link;

    DnsAnswers(SandboxLink link) {
        this.link = link;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, DatagramDnsQuery query) {
        DnsQuestion q = query.count(DnsSection.QUESTION) > 0 ? query.recordAt(DnsSection.QUESTION) : null;
        DatagramDnsResponse response = new DatagramDnsResponse(query.recipient(), query.sender(), query.id());
        response.setOpCode(DnsOpCode.QUERY).setRecursionDesired(query.isRecursionDesired());
        response.setRecursionAvailable(true);
        if (q == null || query.opCode() != DnsOpCode.QUERY) {
            ctx.writeAndFlush(response.setCode(DnsResponseCode.FORMERR));
            return;
        }
        String name = HostPattern.normalize(q.name());
        response.addRecord(DnsSection.QUESTION, new DefaultDnsQuestion(q.name(), q.type(), q.dnsClass()));
        allowed(name)
                .whenComplete((yes, failure) -> ctx.executor().execute(() -> {
                    if (SandboxLookups.Busy.in(failure) != null) {
                        ctx.writeAndFlush(response.setCode(DnsResponseCode.SERVFAIL)); // busy: ask again
                        return;
                    }
                    if (failure != null || !yes) {
                        link.refused("DNS " + q.type().name() + " " + name, "not a name the policy allows");
                        ctx.writeAndFlush(response.setCode(DnsResponseCode.NXDOMAIN));
                        return;
                    }
                    if (q.type().equals(DnsRecordType.A) && link.proxyAddress() instanceof Inet4Address a) {
                        response.addRecord(
                                DnsSection.ANSWER,
                                new DefaultDnsRawRecord(
                                        q.name(),
                                        DnsRecordType.A,
                                        TTL_SECONDS,
                                        ctx.alloc().buffer(4).writeBytes(a.getAddress())));
                    }
                    ctx.writeAndFlush(response.setCode(DnsResponseCode.NOERROR));
                }));
    }

    /**
     * Whether the policy allows {@code name}. A name outside allowed_hosts is looked up (to see whether it lands in an
     * allowed route) only when the policy has routes: with hosts alone, no name the sandbox makes up ever reaches a
     * resolver outside, so lookups cannot carry data out.
     */
    private CompletableFuture<Boolean> allowed(String name) {
        EgressPolicy policy = link.policy();
        if (policy.entryFor(name).isPresent()) {
            return CompletableFuture.completedFuture(true);
        }
        if (policy.allowedRoutes().isEmpty() || name.isEmpty()) {
            return CompletableFuture.completedFuture(false);
        }
        return link.resolve(name).thenApply(addresses -> addresses.stream().anyMatch(policy::routesTo));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // a malformed datagram: nothing to answer; the channel stays open for the next query
    }
}
