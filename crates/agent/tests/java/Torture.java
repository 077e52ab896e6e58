// Torture: 4 threads, each doing a fixed amount of work that allocates
// (the GC runs), gets JIT-compiled, and catches NullPointerExceptions
// (HotSpot's own SIGSEGV handling: implicit null checks). Prints a
// checksum that does not depend on timing.
public class Torture {
    static long work(int seed, int rounds) {
        long sum = 0;
        java.util.ArrayList<int[]> keep = new java.util.ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            int[] a = new int[64 + (i & 63)];
            a[i % a.length] = seed + i;
            if ((i & 1023) == 0) keep.add(a);
            if (keep.size() > 200) keep.clear();
            String s = (i % 7 == 0) ? null : "x";
            try {
                sum += s.length();
            } catch (NullPointerException e) {
                sum += 3;
            }
            sum += a[i % a.length];
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3_000_000;
        long[] sums = new long[4];
        Thread[] threads = new Thread[4];
        for (int t = 0; t < 4; t++) {
            final int id = t;
            threads[t] = new Thread(() -> sums[id] = work(id, rounds), "worker-" + t);
            threads[t].start();
        }
        long total = 0;
        for (int t = 0; t < 4; t++) {
            threads[t].join();
            total += sums[t];
        }
        System.out.println("total " + total);
    }
}
