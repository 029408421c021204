// α and β of a link between two MPI ranks (issue 36; docs/SCALING.md): the one-way time of a
// message of n bytes is about α + n / β. Rank 0 sends n bytes to rank 1, which sends them back;
// the median of the round trips over `reps` halves to the one-way time. Prints one line per size
// and the fit: α from the smallest message (8 bytes), β from the largest (16 MiB).
//   mpirun -np 2 [--mca btl self,tcp] gattn_bench_mpi_pingpong [reps]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 2) {
    if (rank == 0) std::fprintf(stderr, "mpi_pingpong: run it as 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  const int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 21;
  std::vector<char> buffer(size_t(64) << 20);
  double alpha = 0, beta = 0;
  size_t largest = 0;
  if (rank == 0) std::printf("%12s %14s %14s\n", "bytes", "one-way (us)", "GB/s");
  for (size_t bytes = 8; bytes <= buffer.size(); bytes *= 8) {
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buffer.data(), int(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), int(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      times.push_back((MPI_Wtime() - start) / 2);
    }
    std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
    const double one_way = times[size_t(reps / 2)];
    if (bytes == 8) alpha = one_way;
    beta = double(bytes) / (one_way - alpha);
    largest = bytes;
    if (rank == 0)
      std::printf("%12zu %14.2f %14.3f\n", bytes, one_way * 1e6, double(bytes) / one_way / 1e9);
  }
  if (rank == 0)
    std::printf("alpha %.2f us (8-byte one-way), beta %.3f GB/s (%zu bytes, less alpha)\n",
                alpha * 1e6, beta / 1e9, largest);
  MPI_Finalize();
  return 0;
}
