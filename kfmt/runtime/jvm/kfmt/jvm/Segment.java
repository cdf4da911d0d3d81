package kfmt.jvm;

/** The TCP segment a captured frame carries, as kfmt.capture.tcp_segment reads it (its link types: Ethernet with
 * VLAN tags, Linux cooked captures v1 and v2, BSD loopback either byte order, raw IP; IPv4 and IPv6 with extension
 * headers; a fragment after the first carries none): its two ends, sequence number, flags and payload. */
final class Segment {
    String src, dst;
    int sport, dport, flags;
    long seq;
    /** the payload: bytes [at, end) of the packet's */
    int at, end;
    private final java.util.HashMap<Long, String> v4 = new java.util.HashMap<>();

    /** Whether the packet carries a TCP segment kfmt reads (then this one holds it). */
    boolean of(Pcap.Packet p) {
        byte[] b = p.b;
        int n = p.len;
        switch (p.link) {
            case 1 -> { return ethernet(b, 12, n); }
            case 113 -> { return n >= 16 && ip(b, u16(b, 14), 16, n); }
            case 276 -> { return n >= 20 && ip(b, u16(b, 0), 20, n); }
            case 0, 108 -> {
                if (n < 4) return false;
                long fam = p.link == 0 ? Integer.reverseBytes((int) Ctx.i32(b, 0)) & 0xffffffffL : Ctx.u32(b, 0);
                return fam == 10 || fam == 24 || fam == 28 || fam == 30 ? ipv6(b, 4, n) : ipv4(b, 4, n);
            }
            case 12, 14, 101 -> { return n >= 1 && ((b[0] & 0xff) >> 4 == 6 ? ipv6(b, 0, n) : ipv4(b, 0, n)); }
            default -> { return false; }
        }
    }

    private boolean ethernet(byte[] b, int at, int n) {
        while (at + 2 <= n) {
            int type = u16(b, at);
            if (type != 0x8100 && type != 0x88a8 && type != 0x9100) return ip(b, type, at + 2, n);
            at += 4; // a VLAN tag: its type after it
        }
        return false;
    }

    private boolean ip(byte[] b, int type, int at, int n) {
        return type == 0x0800 ? ipv4(b, at, n) : type == 0x86dd && ipv6(b, at, n);
    }

    private boolean ipv4(byte[] b, int at, int n) {
        if (at + 20 > n) return false;
        int ihl = (b[at] & 15) * 4, total = u16(b, at + 2), off = u16(b, at + 6) & 0x1fff;
        if (ihl < 20 || off != 0 || (b[at + 9] & 0xff) != 6) return false;
        int end = total == 0 ? n : Math.min(n, at + total); // (0: segmentation offload, the frame's bytes)
        src = v4(b, at + 12);
        dst = v4(b, at + 16);
        return tcp(b, Math.min(at + ihl, end), end);
    }

    private boolean ipv6(byte[] b, int at, int n) {
        if (at + 40 > n) return false;
        int plen = u16(b, at + 4), next = b[at + 6] & 0xff;
        int end = plen == 0 ? n : Math.min(n, at + 40 + plen), p = at + 40;
        while (next == 0 || next == 43 || next == 60 || next == 44 || next == 51) { // extension headers
            if (p + 8 > end) return false;
            if (next == 44 && (u16(b, p + 2) >> 3) != 0) return false; // a fragment after the first
            int len = next == 44 ? 8 : next == 51 ? ((b[p + 1] & 0xff) + 2) * 4 : ((b[p + 1] & 0xff) + 1) * 8;
            next = b[p] & 0xff;
            p += len;
        }
        if (next != 6 || p > end) return false;
        src = v6(b, at + 8);
        dst = v6(b, at + 24);
        return tcp(b, p, end);
    }

    private boolean tcp(byte[] b, int at, int end) {
        if (at + 20 > end) return false;
        sport = u16(b, at);
        dport = u16(b, at + 2);
        seq = Ctx.u32(b, at + 4);
        int doff = ((b[at + 12] & 0xff) >> 4) * 4;
        if (doff < 20) return false;
        flags = u16(b, at + 12) & 0x1ff;
        this.at = Math.min(at + doff, end);
        this.end = end;
        return true;
    }

    private String v4(byte[] b, int at) {
        long k = Ctx.u32(b, at);
        String s = v4.get(k);
        if (s == null) {
            s = (b[at] & 0xff) + "." + (b[at + 1] & 0xff) + "." + (b[at + 2] & 0xff) + "." + (b[at + 3] & 0xff);
            v4.put(k, s);
        }
        return s;
    }

    /** An IPv6 address as inet_ntop writes it (RFC 5952: the longest run of two or more zero groups, the first of
     * equals, as "::"; lowercase hex without leading zeros; an IPv4-mapped or -compatible address's last 32 bits
     * dotted). */
    static String v6(byte[] b, int at) {
        int[] w = new int[8];
        for (int i = 0; i < 8; i++) w[i] = u16(b, at + 2 * i);
        int best = -1, bestLen = 0;
        for (int i = 0; i < 8; ) {
            int j = i;
            while (j < 8 && w[j] == 0) j++;
            if (j - i > bestLen) { best = i; bestLen = j - i; }
            i = j == i ? i + 1 : j;
        }
        if (bestLen < 2) best = -1;
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == best) {
                s.append(i == 0 ? "::" : ":");
                i += bestLen - 1;
                continue;
            }
            if (best == 0 && i == 6 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff))) {
                s.append(b[at + 12] & 0xff).append('.').append(b[at + 13] & 0xff).append('.')
                        .append(b[at + 14] & 0xff).append('.').append(b[at + 15] & 0xff);
                break;
            }
            s.append(Integer.toHexString(w[i]));
            if (i < 7) s.append(':');
        }
        return s.toString();
    }

    private static int u16(byte[] b, int at) {
        return ((b[at] & 0xff) << 8) | (b[at + 1] & 0xff);
    }
}
