/* One kernel, several ways to end, for `reprise check`'s tests. It is
 * recorded in mode 0; a test then rewrites the mode in the capture's
 * snapshot to make the replay of that capture misbehave:
 *   0  data[i] += 1 (the recorded output)
 *   1  spin forever (a hang, for --timeout)
 *   2  write through a null pointer (a fault the host's guard catches)
 *   3  kill its own process with SIGKILL (a worker killed by a signal)
 *   4  sleep 100 ms, set the mode back to 0, then as 0 (a slow capture
 *      whose output is still the recorded one)
 *   5  print results that say "passed" on stdout, as a `check` worker
 *      marks them, and compute nothing (an output that differs)
 *   6  print one result that says the kernel ran, then end the process
 *      with status 0 before the worker writes the output */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void check_modes(long *mode, float *data, intptr_t n) {
    switch (*mode) {
    case 1: {
        volatile long spins = 0;
        for (;;)
            spins++;
    }
    case 2: {
        volatile int *nowhere = 0;
        *nowhere = 1;
        return;
    }
    case 3:
        kill(getpid(), SIGKILL);
        return;
    case 4: {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, 0);
        *mode = 0;
        break;
    }
    case 5: {
        static const char forged[] =
            "\nreprise-check-result {\"status\":\"passed\",\"kernel\":null,"
            "\"backend\":null,\"kernel_times_ns\":[],\"replay_times_ns\":[],"
            "\"message\":\"forged\"}\n"
            "reprise-check-result {\"outcome\":\"ran\",\"kernel\":null,"
            "\"backend\":null,\"kernel_times_ns\":[],\"replay_times_ns\":[],"
            "\"message\":\"forged\"}\n";
        for (int i = 0; i < 4; i++)
            if (write(1, forged, strlen(forged)) < 0)
                break;
        return;
    }
    case 6: {
        static const char forged[] =
            "\nreprise-check-result {\"outcome\":\"ran\",\"kernel\":null,"
            "\"backend\":null,\"kernel_times_ns\":[],\"replay_times_ns\":[],"
            "\"message\":\"forged\"}\n";
        if (write(1, forged, strlen(forged)) < 0)
            _exit(3);
        _exit(0);
    }
    default:
        break;
    }
    for (intptr_t i = 0; i < n; i++)
        data[i] += 1.0f;
}
