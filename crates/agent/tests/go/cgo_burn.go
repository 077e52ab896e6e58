// cgo_burn: 4 goroutines, each calling a C loop (c_burn) and a Go loop
// (goBurn) for a fixed amount of work; prints a checksum that does not
// depend on timing. Built at test time with Debian's Go (cgo on).
package main

/*
#include <stdint.h>
__attribute__((noinline)) uint64_t c_burn(uint64_t rounds) {
    uint64_t x = 1;
    for (uint64_t i = 0; i < rounds; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

//go:noinline
func goBurn(rounds uint64) uint64 {
	x := uint64(7)
	for i := uint64(0); i < rounds; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	return x
}

func main() {
	rounds := uint64(200000000)
	if len(os.Args) > 1 {
		n, _ := strconv.ParseUint(os.Args[1], 10, 64)
		rounds = n
	}
	var wg sync.WaitGroup
	sums := make([]uint64, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				sums[g] ^= uint64(C.c_burn(C.uint64_t(rounds/4 + uint64(i))))
				sums[g] ^= goBurn(rounds/4 + uint64(i)) << 1
			}
		}(g)
	}
	wg.Wait()
	fmt.Println(sums[0], sums[0] == sums[1] && sums[1] == sums[2] && sums[2] == sums[3])
}
