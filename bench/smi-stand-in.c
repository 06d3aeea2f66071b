// A stand-in nvidia-smi for timing one-shot collect on a machine without a GPU (bench/side-by-side.mjs
// --smi-capture): it sleeps as long as the real call took on a GPU host, then prints what the recorded
// stand-in (test/fixtures/bin/nvidia-smi) answered to the same arguments. Unlike that one, a Node.js
// program whose own start-up is most of its time, this one starts in about a millisecond and spends
// no CPU while it "runs", as nvidia-smi waits on the driver on a host with cores to spare.
//   SMI_STAND_IN_DIR=DIR: DIR/<kind>.out and DIR/<kind>.ms for kind query-gpu, compute-apps, help, other.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void print_file(const char *dir, const char *kind, const char *ext, char *buffer, size_t room, size_t *read) {
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.%s", dir, kind, ext);
	FILE *file = fopen(path, "r");
	*read = file ? fread(buffer, 1, room - 1, file) : 0;
	buffer[*read] = 0;
	if (file) fclose(file);
}

int main(int argc, char **argv) {
	const char *dir = getenv("SMI_STAND_IN_DIR");
	if (!dir) return 255;
	const char *kind = "other";
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--query-gpu", 11) == 0) kind = "query-gpu";
		else if (strncmp(argv[i], "--query-compute-apps", 20) == 0) kind = "compute-apps";
		else if (strcmp(argv[i], "--help-query-gpu") == 0) kind = "help";
	}
	static char out[1 << 20];
	char ms[64];
	size_t n;
	print_file(dir, kind, "ms", ms, sizeof ms, &n);
	long delay = atol(ms);
	struct timespec wait = {delay / 1000, (delay % 1000) * 1000000L};
	while (nanosleep(&wait, &wait) != 0) {}
	print_file(dir, kind, "out", out, sizeof out, &n);
	fwrite(out, 1, n, stdout);
	return 0;
}
