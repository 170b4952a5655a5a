/*
 * corpus_replay.c: runs a libFuzzer target's entry point over every file of a corpus
 * directory (or over the files named on the command line), so that `make check` replays the
 * committed corpora under the plain and the sanitizer builds without needing libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;
    if (!f) {
        perror(path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "%s: read failed\n", path);
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *de;
            char path[4096];
            if (!d) {
                perror(argv[i]);
                return 1;
            }
            while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] == '.')
                    continue;
                snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
                failed += run_file(path) != 0;
                files++;
            }
            closedir(d);
        } else {
            failed += run_file(argv[i]) != 0;
            files++;
        }
    }
    if (files == 0) {
        fprintf(stderr, "no corpus files\n");
        return 1;
    }
    printf("%d passed, %d failed\n", files - failed, failed);
    return failed != 0;
}
