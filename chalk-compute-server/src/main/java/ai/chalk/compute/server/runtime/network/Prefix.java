package ai.chalk.compute.server.runtime.network;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * An address prefix ({@code 169.254.0.0/16}, {@code fd00:ec2::254/128}), normalised so that the bits past the
 * length are zero.
 *
 * @param address the first address of the prefix
 * @param length  the number of leading bits that count
 */
public record Prefix(InetAddress address, int length) {

    public Prefix {
        int bits = address.getAddress().length * 8;
        if (length < 0 || length > bits) {
            throw new IllegalArgumentException("prefix length " + length + " out of range for " + address);
        }
        address = masked(address, length);
    }

    /** Parses {@code ADDRESS} or {@code ADDRESS/LENGTH}; only literal addresses, never a name to resolve. */
    public static Prefix parse(String cidr) {
        int slash = cidr.indexOf('/');
        String host = slash < 0 ? cidr : cidr.substring(0, slash);
        if (host.isEmpty() || !host.matches("[0-9a-fA-F:.]+")) {
            throw new IllegalArgumentException("not an IP address or prefix: " + cidr);
        }
        InetAddress a;
        try {
            a = InetAddress.getByName(host); // a literal: no lookup happens
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an IP address or prefix: " + cidr, e);
        }
        int bits = a.getAddress().length * 8;
        return new Prefix(a, slash < 0 ? bits : Integer.parseInt(cidr.substring(slash + 1)));
    }

    /** The prefix of exactly one address. */
    public static Prefix of(InetAddress address) {
        return new Prefix(address, address.getAddress().length * 8);
    }

    public boolean isV4() {
        return address instanceof Inet4Address;
    }

    /** Whether every address of {@code other} is in this prefix. */
    public boolean contains(Prefix other) {
        if (isV4() != other.isV4() || other.length < length) {
            return false;
        }
        return masked(other.address, length).equals(address);
    }

    /** As nft writes it: {@code 10.0.2.0/24}, or the bare address for a single one. */
    String nft() {
        String a = address.getHostAddress();
        int bits = address.getAddress().length * 8;
        return length == bits ? a : a + "/" + length;
    }

    private static InetAddress masked(InetAddress address, int length) {
        byte[] b = address.getAddress();
        for (int i = 0; i < b.length; i++) {
            int keep = Math.max(0, Math.min(8, length - i * 8));
            b[i] &= (byte) (0xff << (8 - keep));
        }
        try {
            return InetAddress.getByAddress(b); // drops any scope id: rules match the address alone
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e); // four or sixteen bytes always make an address
        }
    }
}
